/*
 * json-filter: ramping each server through held arrival rates, how much of what k6 offered got
 * through, what was the p99 of each step, and what did the backend receive behind the filters?
 */
import { PROM, runVariables, board, prom, run, judgedRow, perSecond, STEP_NOTE } from './lib.mjs';

/** jsonFilter's row 'Ramps: offered and delivered'. */
const jsonFilterRampsOfferedAndRow = ({ ramp }) => ({
  title: 'Ramps: offered and delivered',
  panels: [
    prom(
      'Delivered (answered) per second, by server',
      'reqps',
      [
        {
          expr: perSecond(`k6_http_reqs_total{${ramp}}`),
          legend: '{{case}}',
          truth: { figure: 'requests', by: ['case'], read: 'integral' },
        },
      ],
      { suite: 'breakpoint', description: STEP_NOTE },
    ),
    prom(
      'Offered per second (started + dropped iterations), by server',
      'reqps',
      [
        {
          expr: `(sum by (case) (rate(k6_iterations_total{${ramp}}[$__rate_interval])) + sum by (case) (rate(k6_dropped_iterations_total{${ramp}}[$__rate_interval]))) or sum by (case) (rate(k6_iterations_total{${ramp}}[$__rate_interval]))`,
          legend: '{{case}}',
        },
      ],
      {
        suite: 'breakpoint',
        optional: ['k6_dropped_iterations_total'],
        noTruth: 'offered per second of a ramp: its steps are judged in the outcomes, per held rate',
      },
    ),
  ],
});

/** jsonFilter's row 'Per step and behind the filters'. */
const jsonFilterPerStepAndRow = () => ({
  title: 'Per step and behind the filters',
  panels: [
    prom(
      'p99 of each held step, by server and rate',
      's',
      [{ expr: `max by (__name__) ({__name__=~"k6_.*_ramp_[0-9]+_ms_p99", ${run}})`, legend: '{{__name__}}' }],
      { suite: 'breakpoint', noTruth: 'per held step: judged in the outcomes, per rate' },
    ),
    prom(
      'What the backend received per second, by case',
      'reqps',
      [
        {
          expr: 'sum by (location) (rate(lab_nginx_requests_total{service="json-filter-backend", location=~"/filter/.*"}[$__rate_interval]))',
          legend: '{{location}}',
        },
      ],
      { noTruth: "by the backend's location: the run's counts are per case" },
    ),
    prom(
      "Filters' own outcomes per second",
      'reqps',
      [
        {
          expr: 'sum by (service, outcome) (rate(json_filter_requests_total[$__rate_interval]))',
          legend: '{{service}} {{outcome}}',
        },
      ],
      { noTruth: "the filters' own outcomes: the run keeps no figure of them per second" },
    ),
  ],
});

export default function jsonFilter() {
  const ramp = `${run}, case=~"$case", case=~".*-ramp"`;
  return board({
    uid: 'lab-json-filter',
    title: 'lab / json-filter',
    tags: ['capacity', 'json-filter'],
    description:
      'Each server ramped through held arrival rates: what k6 offered and what got through, the p99 of each step, and what the backend received.',
    variables: runVariables(PROM),
    rows: [jsonFilterRampsOfferedAndRow({ ramp }), jsonFilterPerStepAndRow(), judgedRow('json-filter')],
  });
}
