/*
 * caching: with users looping through two limiters to the application, where do answers come
 * from (client cache, server cache, upstream, app), what did each hop count, and how busy is the
 * application's queue?
 */
import { PROM, runVariables, board, prom, runCase, judgedRow, fromSummary } from './lib.mjs';

const mine = `${runCase}, experiment="caching"`;

/** Answers as JMeter's summary report gives them: by source and status, so far, and their latency. */
const answersRow = () => ({
  title: 'Answers, as the seed counted them',
  panels: [
    // Counts over the range, as JMeter's summary report gives them: k6 pushes a counter only
    // when it grows, and a case that ends within a second leaves one sample, no rate.
    prom(
      'Answers by case and source (client cache, server cache, upstream, app)',
      'none',
      [
        {
          expr: `sum by (case, source) (max_over_time(k6_lab_responses_total{${mine}}[$__range]))`,
          legend: '{{case}} {{source}}',
          truth: fromSummary('lab_responses', 'count', ['case', 'source']),
        },
      ],
      { table: true },
    ),
    prom(
      'Answers by case and status (200, 503)',
      'none',
      [
        {
          expr: `sum by (case, status) (max_over_time(k6_lab_responses_total{${mine}}[$__range]))`,
          legend: '{{case}} {{status}}',
          truth: fromSummary('lab_responses', 'count', ['case', 'status']),
        },
      ],
      { table: true },
    ),
    // So far rather than per second: a smoke case's counter may have one sample, no rate.
    prom('Answers so far, by case and source', 'none', [
      {
        expr: `sum by (case, source) (k6_lab_responses_total{${mine}})`,
        legend: '{{case}} {{source}}',
        truth: fromSummary('lab_responses', 'count', ['case', 'source']),
      },
    ]),
    prom('Mean latency (since the case started), by case and source', 's', [
      {
        expr: `max by (case, source) (k6_lab_response_time_by_source_avg{${mine}})`,
        legend: '{{case}} {{source}}',
        truth: fromSummary('lab_response_time_by_source', 'avg', ['case', 'source']),
      },
    ]),
    prom('Mean and max latency (since the case started), by case', 's', [
      {
        expr: `max by (case) (k6_lab_response_time_avg{${mine}})`,
        legend: '{{case}} mean',
        truth: fromSummary('lab_response_time', 'avg', ['case']),
      },
      {
        expr: `max by (case) (k6_lab_response_time_max{${mine}})`,
        legend: '{{case}} max',
        truth: fromSummary('lab_response_time', 'max', ['case']),
      },
    ]),
  ],
});

/** What each hop counted: the two nginx by location and decision, the application's served requests and queue. */
const chainRow = () => ({
  title: 'Along the chain',
  panels: [
    prom(
      'Front and back nginx: requests per second, by location and limit_req decision',
      'reqps',
      [
        {
          expr: 'sum by (location, limit_req) (rate(lab_nginx_requests_total{service="caching-nginx", case=~"$case"}[$__rate_interval]))',
          legend: '{{location}} {{limit_req}}',
        },
      ],
      { noTruth: "by location and decision: the run's proxy counts are per case (nothing lost)" },
    ),
    prom(
      'Application: served per second, by case and resource',
      'reqps',
      [
        {
          expr: 'sum by (case, resource) (rate(lab_app_requests_total{service="caching-app", case=~"$case", status="200"}[$__rate_interval]))',
          legend: '{{case}} {{resource}}',
        },
      ],
      { noTruth: "by resource: the application's counts the run keeps are per case (nothing lost)" },
    ),
    prom(
      'Application: busy workers and queue',
      'none',
      [
        { expr: 'max(lab_app_busy_workers{service="caching-app"})', legend: 'busy workers' },
        { expr: 'max(lab_app_queue_length{service="caching-app"})', legend: 'queued' },
      ],
      { noTruth: "the application's state over time: the run keeps no figure of it" },
    ),
  ],
});

export default function caching() {
  return board({
    uid: 'lab-caching',
    title: 'lab / caching',
    tags: ['closed-loop', 'caching'],
    description:
      "Users looping through two limiters to the application (seed 000): answers as JMeter counted them (client-cache hits included), what each hop counted, and the application's queue.",
    variables: runVariables(PROM),
    rows: [answersRow(), chainRow(), judgedRow('caching')],
  });
}
