/*
 * cdn: a load balancer, 4 edge caches and 2 origins, each nginx in a cgroup at a cap level: what
 * throughput does each level give, where did the requests go, and what did each nginx use of its cap?
 */
import {
  PROM,
  runVariables,
  board,
  prom,
  runCase,
  cgroupPanels,
  judgedRow,
  perSecond,
  STEP_NOTE,
  SLOWEST_SERIES_NO_TRUTH,
  fromSummary,
} from './lib.mjs';

const CHAIN_NO_TRUTH = "by service along the chain: the run's counts are per cap level (nothing lost)";

const mine = `${runCase}, experiment="cdn"`;
const chain = (role) => `service=~"cdn-${role}.*", case=~"$case", case!=""`;

/** Per cap level: its throughput, its slowest p99, and the edges' cache statuses. */
const levelRow = () => ({
  title: 'Per cap level',
  panels: [
    prom(
      'Throughput per second, by cap level',
      'reqps',
      [
        {
          expr: perSecond(`k6_http_reqs_total{${mine}}`),
          legend: '{{case}}',
          truth: { figure: 'requests', by: ['case'], read: 'integral' },
        },
      ],
      { description: STEP_NOTE },
    ),
    prom(
      'p99 of the slowest status (since the level started), by cap level',
      's',
      [{ expr: `max by (case) (k6_http_req_duration_p99{${mine}})`, legend: '{{case}}' }],
      { noTruth: SLOWEST_SERIES_NO_TRUTH },
    ),
    prom(
      "Answers by the edge's cache status, by cap level",
      'none',
      [
        {
          expr: `sum by (case, cache) (max_over_time(k6_lab_cdn_answers_total{${mine}}[$__range]))`,
          legend: '{{case}} {{cache}}',
          truth: fromSummary('lab_cdn_answers', 'count', ['case', 'cache']),
        },
      ],
      { table: true },
    ),
  ],
});

/** Along the chain: each nginx's own count, the balancer and edges per second, the origins' refills. */
const chainRow = () => ({
  title: 'Along the chain, as each nginx counted',
  panels: [
    prom(
      'Load balancer and edges: requests per second, by service',
      'reqps',
      [
        {
          expr: `sum by (service) (rate(lab_nginx_requests_total{service=~"cdn-(lb|edge.*)", case=~"$case", case!=""}[$__rate_interval]))`,
          legend: '{{service}}',
        },
      ],
      { noTruth: CHAIN_NO_TRUTH },
    ),
    prom(
      "Origins: pages served (the edges' refills), by service",
      'none',
      [
        {
          expr: `sum by (service) (max_over_time(lab_nginx_requests_total{${chain('origin')}}[$__range]))`,
          legend: '{{service}}',
        },
      ],
      { table: true, noTruth: CHAIN_NO_TRUTH },
    ),
  ],
});

export default function cdn() {
  return board({
    uid: 'lab-cdn',
    title: 'lab / cdn',
    tags: ['capped', 'cdn'],
    description:
      'A load balancer, 4 edge caches and 2 origins, each nginx in a cgroup with its cap level (seed 001): throughput per level, where the requests went, and what each nginx used of its cap.',
    variables: runVariables(PROM),
    rows: [
      levelRow(),
      chainRow(),
      { title: 'Resources (cgroups)', panels: cgroupPanels('name=~"cdn-.*"') },
      judgedRow('cdn'),
    ],
  });
}
