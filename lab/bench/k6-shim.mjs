/*
 * k6's own modules (k6, k6/http, k6/metrics, k6/execution, k6/data) and globals (__ENV, open),
 * stood in for in Node, so that lab/bench/cardinality.mjs can run the lab's k6 code
 * (k6/lib/run.js and the kinds' executors) on a plan and record the tag set of every sample that
 * code would emit, with the tags k6 itself would add. Nothing is sent anywhere. Why: the series a
 * run adds to each store follow from those tag sets, and they are the k6 code's own, not a list
 * kept by hand beside it; a tag added to the k6 code shows up here.
 *
 * What k6 adds is modelled on k6 1.x as the stores showed it: every HTTP request carries proto,
 * status, method, url, name (the URL unless the request names it), expected_response, the
 * scenario's tags (`scenario` and its own) or, in setup and teardown, group ::setup / ::teardown;
 * each iteration counts `iterations`, `iteration_duration`, `data_sent` and `data_received` with
 * its scenario's tags, setup and teardown the last two with their group; `vus` and `vus_max`
 * carry the run's tags alone. A healthy run is modelled: no network errors (status 0 with
 * error and error_code) and no dropped iterations, which would each add a series per case.
 * vu and iter are k6's metadata, not tags, and are left out.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const K6_LIB = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'k6', 'lib');

/** What the simulation knows of where it is; cardinality.mjs sets it before each call. */
export const sim = {
  // The k6 code's root (k6/lib), for open() of a relative path.
  lib: K6_LIB,
  // metric name -> {type, sets: Map(key -> tags)}
  samples: new Map(),
  // The run's tags (--tag testid, experiment, suite, segment).
  runTags: {},
  // Where the code runs: scenario name and tags (null in setup and teardown), group, VU, iteration.
  ctx: { scenario: null, scenarioTags: {}, group: '', vu: 1, vuTags: {}, iteration: 0, startTime: 0, answered: 0 },
  // Files open() serves without a disk (the plan the runner would write).
  files: {},
  // (request) -> {status, headers}: what the servers answer; set by cardinality.mjs.
  answer: () => ({ status: 200, headers: {} }),
};

/** Starts a fresh record. */
export function resetSamples() {
  sim.samples = new Map();
}

// Tags with an empty value are no tags: neither store keeps them (k6's root group is '').
const clean = (tags) =>
  Object.fromEntries(
    Object.entries(tags)
      .filter(([, v]) => v !== '' && v !== undefined && v !== null)
      .map(([k, v]) => [k, String(v)])
      .sort(([a], [b]) => (a < b ? -1 : 1)),
  );

/** The tags every sample at this point gets: the run's, the scenario's or the group, the VU's. */
export function baseTags() {
  const { scenario, scenarioTags, group, vuTags } = sim.ctx;
  return { ...sim.runTags, ...(scenario ? { scenario, ...scenarioTags } : {}), group, ...vuTags };
}

/** One sample of `name` (a k6 metric of `type`) with `tags` on top of the base tags. */
export function record(name, type, tags = {}) {
  const all = clean({ ...baseTags(), ...tags });
  let m = sim.samples.get(name);
  if (!m) sim.samples.set(name, (m = { type, sets: new Map() }));
  if (m.type !== type) throw new Error(`metric ${name} is a ${m.type} and a ${type}`);
  m.sets.set(JSON.stringify(all), all);
}

class Metric {
  constructor(name, type) {
    this.name = name;
    this.type = type;
  }

  add(value, tags = {}) {
    record(this.name, this.type, tags);
  }
}

const metrics = {
  Counter: class extends Metric {
    constructor(name) {
      super(name, 'counter');
    }
  },
  Gauge: class extends Metric {
    constructor(name) {
      super(name, 'gauge');
    }
  },
  Rate: class extends Metric {
    constructor(name) {
      super(name, 'rate');
    }
  },
  Trend: class extends Metric {
    constructor(name) {
      super(name, 'trend');
    }
  },
};

const HTTP_TRENDS = [
  'http_req_duration',
  'http_req_blocked',
  'http_req_connecting',
  'http_req_tls_handshaking',
  'http_req_sending',
  'http_req_waiting',
  'http_req_receiving',
];

/** One request: the samples k6 emits for it, and the answer the simulation gives. */
function request(method, url, body, params = {}) {
  const { status, headers = {} } = sim.answer({ method, url, params, ctx: sim.ctx });
  sim.ctx.answered += 1;
  const tags = {
    proto: 'HTTP/1.1',
    status: String(status),
    method,
    url,
    name: url,
    // k6's default, or the statuses a responseCallback (http.expectedStatuses) names.
    expected_response: String(
      params.responseCallback ? params.responseCallback.includes(status) : status >= 200 && status < 400,
    ),
    ...(params.tags || {}),
  };
  record('http_reqs', 'counter', tags);
  record('http_req_failed', 'rate', tags);
  for (const t of HTTP_TRENDS) record(t, 'trend', tags);
  return {
    status,
    headers,
    body: '',
    error: '',
    error_code: 0,
    url,
    timings: { duration: 1, blocked: 0, connecting: 0, tls_handshaking: 0, sending: 0, waiting: 1, receiving: 0 },
    // The bookkeeping endpoints' answers, empty: the application's /counts, the backend's /stats.
    json: () => ({ paths: {} }),
  };
}

const http = {
  get: (url, params) => request('GET', url, null, params),
  head: (url, params) => request('HEAD', url, null, params),
  del: (url, body, params) => request('DELETE', url, body, params),
  post: (url, body, params) => request('POST', url, body, params),
  put: (url, body, params) => request('PUT', url, body, params),
  patch: (url, body, params) => request('PATCH', url, body, params),
  request: (method, url, body, params) => request(method, url, body, params),
  batch: () => {
    throw new Error('k6-shim: http.batch is not modelled; add it to lab/bench/k6-shim.mjs');
  },
  // As k6's, a value for a request's responseCallback; here the statuses themselves (ranges as {min,
  // max} are not modelled).
  expectedStatuses: (...statuses) => statuses.map(Number),
};

const k6 = {
  sleep: () => {},
  fail: (msg) => {
    throw new Error(`k6 fail(): ${msg}`);
  },
  check: (value, sets, tags = {}) => {
    let all = true;
    for (const [name, f] of Object.entries(sets)) {
      const ok = typeof f === 'function' ? Boolean(f(value)) : Boolean(f);
      record('checks', 'rate', { check: name, ...tags });
      all &&= ok;
    }
    return all;
  },
  group: (name, fn) => {
    const before = sim.ctx.group;
    sim.ctx.group = `${before}::${name}`;
    try {
      return fn();
    } finally {
      sim.ctx.group = before;
    }
  },
};

const exec = {
  get vu() {
    const c = sim.ctx;
    return {
      idInTest: c.vu,
      idInInstance: c.vu,
      iterationInScenario: c.iteration,
      iterationInInstance: c.iteration,
      tags: c.vuTags,
      metrics: { tags: c.vuTags, metadata: {} },
    };
  },
  get scenario() {
    const c = sim.ctx;
    return {
      name: c.scenario,
      iterationInTest: c.iteration,
      iterationInInstance: c.iteration,
      startTime: c.startTime,
      executor: c.executor,
      progress: 0,
    };
  },
  get instance() {
    return {
      iterationsCompleted: sim.ctx.iteration,
      iterationsInterrupted: 0,
      vusActive: 1,
      vusInitialized: 1,
      currentTestRunDuration: 0,
    };
  },
  test: {
    abort: (msg) => {
      throw new Error(`k6 exec.test.abort(): ${msg}`);
    },
    options: {},
  },
};

// A SharedArray's function runs once; the array is what it returned.
class SharedArray {
  constructor(name, fn) {
    return fn();
  }
}

/** Each stood-in module: its default export and its named ones. */
export const modules = {
  k6: { default: k6, ...k6 },
  'k6/http': { default: http, ...http },
  'k6/metrics': { default: metrics, ...metrics },
  'k6/execution': { default: exec },
  'k6/data': { default: { SharedArray }, SharedArray },
};

/** k6's open(): the simulation's own files, a file: URL, or a path from the k6 code's folder. */
function open(path) {
  if (path in sim.files) return sim.files[path];
  const file = String(path).startsWith('file:') ? fileURLToPath(path) : resolve(sim.lib, path);
  return readFileSync(file, 'utf8');
}

/** Puts k6's globals where the k6 code looks for them. */
export function installGlobals(env) {
  globalThis.__ENV = env;
  globalThis.open = open;
  Object.defineProperty(globalThis, '__VU', { get: () => sim.ctx.vu, configurable: true });
  Object.defineProperty(globalThis, '__ITER', { get: () => sim.ctx.iteration, configurable: true });
}
