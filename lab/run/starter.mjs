/*
 * Starting k6 processes together, as k6-operator's starter starts a TestRun's runners: each is
 * started paused (`k6 run --paused --no-setup`) with its own REST API on 127.0.0.1; once every
 * one has initialised its VUs and waits, the first runs setup() once (POST /v1/setup: the
 * stack's health check), the others are given its data (PUT /v1/setup), and all are resumed at
 * once (PATCH /v1/status). Only the first runs teardown(). Why: a setup() in every process,
 * after the resume, costs each process a different time on a shared machine, and that becomes
 * the skew between the segments' schedules; what skew remains is measured per run
 * (segments.mjs scheduleSkew, docs/model.md), not assumed.
 */

// k6's lib.ExecutionStatus: initialised, paused, waiting for a resume (k6 v1.8.1).
export const PAUSED_BEFORE_RUN = 4;
const POLL_MS = 50;

/**
 * The arguments that start process i paused, with its REST API on `address`, without its own setup()
 * (and teardown() but in the first).
 */
export const pausedArgs = (address, i = 0) => [
  '--paused',
  '--address',
  address,
  '--no-setup',
  ...(i > 0 ? ['--no-teardown'] : []),
];

/** k6's status attributes at `address`, or null while its API does not answer yet. */
async function status(address) {
  try {
    const res = await fetch(`http://${address}/v1/status`, { signal: AbortSignal.timeout(2000) });
    return res.ok ? (await res.json()).data.attributes : null;
  } catch {
    return null;
  }
}

/**
 * Waits until every process waits paused with its VUs allocated; rejects when one exits first
 * (`exited[i]` a promise) or `timeoutMs` passes, naming it.
 */
export async function waitPaused(addresses, exited, { timeoutMs = 120_000 } = {}) {
  let gone = null;
  exited.forEach((p, i) =>
    p.then((e) => {
      gone ??= { i, ...e };
    }),
  );
  const ready = new Set();
  const until = Date.now() + timeoutMs;
  while (ready.size < addresses.length) {
    if (gone)
      throw new Error(`k6 process ${gone.i} exited before the start (code ${gone.code}, signal ${gone.signal})`);
    if (Date.now() > until)
      throw new Error(
        `k6 processes ${addresses
          .map((a, i) => i)
          .filter((i) => !ready.has(i))
          .join(', ')} were not ready (paused, VUs allocated) after ${timeoutMs / 1000} s`,
      );
    await Promise.all(
      addresses.map(async (a, i) => {
        if (ready.has(i)) return;
        const s = await status(a);
        if (s && s.status === PAUSED_BEFORE_RUN && s.paused) ready.add(i);
      }),
    );
    if (ready.size < addresses.length) await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** Resumes every process at once; resolves to how long the requests took, first sent to last answered (ms). */
export async function resumeAll(addresses) {
  const body = JSON.stringify({ data: { type: 'status', id: 'default', attributes: { paused: false } } });
  const t = performance.now();
  const answers = await Promise.all(
    addresses.map((a) =>
      fetch(`http://${a}/v1/status`, {
        method: 'PATCH',
        body,
        headers: { 'content-type': 'application/json' },
        signal: AbortSignal.timeout(5000),
      }),
    ),
  );
  const bad = answers.map((r, i) => [r, i]).filter(([r]) => !r.ok);
  if (bad.length)
    throw new Error(`k6 did not resume: ${bad.map(([r, i]) => `process ${i} answered ${r.status}`).join(', ')}`);
  return performance.now() - t;
}

/** Runs setup() once, in the first process, and gives its data to the others; resolves to how long that took (ms). */
export async function shareSetup(addresses) {
  const t = performance.now();
  const res = await fetch(`http://${addresses[0]}/v1/setup`, { method: 'POST', signal: AbortSignal.timeout(60_000) });
  if (!res.ok) throw new Error(`setup() in k6 process 0 failed: ${res.status} ${(await res.text()).slice(0, 300)}`);
  const data = (await res.json()).data.attributes.data;
  const body = JSON.stringify(data ?? null);
  await Promise.all(
    addresses.slice(1).map(async (a, i) => {
      const r = await fetch(`http://${a}/v1/setup`, {
        method: 'PUT',
        body,
        headers: { 'content-type': 'application/json' },
        signal: AbortSignal.timeout(5000),
      });
      if (!r.ok) throw new Error(`k6 process ${i + 1} refused the setup data: ${r.status}`);
    }),
  );
  return performance.now() - t;
}
