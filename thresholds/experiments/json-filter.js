/*
 * Seed 004: a JSON filter relays some POSTed documents to a backend that answers 204 after
 * 30 ms and answers the others 204 itself. The seed measured a Node raw-socket filter with
 * `wrk -c 2500 -t 1000 -d 20`: 5.3 k r/s on one core, 7.2 k r/s as a cluster, on a two-core
 * i3-2120T; an unpublished Erlang filter was compared. Here: Node single, Node cluster, an
 * Erlang/OTP filter, and nginx relaying everything as the reference.
 *
 * This is a capacity experiment: nothing limits the rate, so the model is about correctness
 * under load: the filter rule decides which documents reach the backend (the backend's count
 * must equal the relayed ones), a relayed answer cannot come sooner than the backend's delay,
 * and below its breakpoint a server answers everything (errors < 1 %, p99 < 1 s).
 */
const servers = ['node', 'node-cluster', 'erlang', 'nginx'];
// Arrival rates of the breakpoint ramp, held one after another.
import { FIRST_STEP } from '../capacity.js';

const STEPS = [FIRST_STEP, 1000, 2000, 3000, 4000, 5000, 6000, 8000, 10000, 12000, 16000];

export default {
  name: 'json-filter',
  seed: '004',
  kind: 'capacity',
  knobs: {
    backend_delay_ms: { default: 30, kind: 'count', doc: "the backend's think time before its 204 (ms)" },
    backend_timeout_ms: { default: 1000, kind: 'whole', doc: 'how long a filter waits for the backend before 504 (ms)' },
    cluster_workers: { default: 2, kind: 'whole', doc: 'worker processes of the Node cluster filter' },
    relay_percent: { default: 50, kind: 'percent', doc: 'share of documents that ask to be relayed' },
    connections: { default: 2500, kind: 'whole', doc: 'connections (k6 VUs) of the closed run, as the seed' },
  },
  derived: (k) => ({ backend_delay_s: k.backend_delay_ms / 1000 }),
  targets: () => servers.map((s) => ({ id: s, service: `json-filter-${s}`, path: '/filter' })),
  /** Cases per suite; `f` is the --quick factor, which shortens durations only (no rate here). */
  cases: {
    smoke: () => servers.map((s) => ({ id: `${s}-smoke`, target: s, kind: 'open', rate: 10, seconds: 2 })),
    breakpoint: (k, f) =>
      servers.flatMap((s) => [
        { id: `${s}-ramp`, target: s, kind: 'ramp', steps: STEPS, rampS: 1 / f, holdS: 4 / f },
        { id: `${s}-closed`, target: s, kind: 'closed', vus: k.connections, seconds: 20 / f },
      ]),
  },
  suites: { smoke: true, breakpoint: true },
  /** The seed's closed-run figures (k r/s), from another machine: shown, never a threshold. */
  seedFigures: { 'node-closed': { krps: 5.3 }, 'node-cluster-closed': { krps: 7.2 } },
};
