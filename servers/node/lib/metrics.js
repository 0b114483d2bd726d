/*
 * The Node servers' own metrics (prom-client), served on GET /metrics: the default process
 * metrics and the server's counters. In a cluster, a worker
 * that gets the scrape asks the primary, which gathers every worker's (AggregatorRegistry):
 * a scrape answered by one worker alone would see only its share.
 */
import cluster from 'node:cluster';
import client from 'prom-client';
import { CASE_NAME, MAX_NAMES, nameBook } from './request-guard.js';

// Prometheus labels every series with the service it scraped (docker-compose.yml), so no label here.
export function serverMetrics() {
  client.collectDefaultMetrics();
  const labels = nameBook(MAX_NAMES);
  let seq = 0;
  const pending = new Map();
  if (cluster.isWorker) {
    // prom-client answers the primary's gathering only once a worker has built an
    // AggregatorRegistry of its own (that is what registers its listener).
    new client.AggregatorRegistry();
    process.on('message', (m) => {
      if (m?.lab !== 'metrics') return;
      pending.get(m.id)?.(m.text);
      pending.delete(m.id);
    });
  }
  return {
    counter: (name, help, labelNames = []) => new client.Counter({ name, help, labelNames }),
    gauge: (name, help, labelNames = []) => new client.Gauge({ name, help, labelNames }),
    /**
     * The label for the lab case a request names: the name ('' for none) if it is one
     * (request-guard's CASE_NAME) among the first MAX_NAMES seen; anything else is 'other'.
     */
    caseLabel(value = '') {
      const named = value === '' || (typeof value === 'string' && CASE_NAME.test(value));
      return named && labels.admit(value) ? value : 'other';
    },
    contentType: client.register.contentType,
    /** The text a scrape gets: this process's, or the whole cluster's. */
    text() {
      if (!cluster.isWorker) return client.register.metrics();
      return new Promise((resolve) => {
        seq += 1;
        pending.set(seq, resolve);
        process.send({ lab: 'metrics?', id: seq });
      });
    },
  };
}

/** In a cluster's primary: answer the workers' requests for the whole cluster's metrics. */
export function gatherForWorkers() {
  const registry = new client.AggregatorRegistry();
  cluster.on('message', (worker, m) => {
    if (m?.lab !== 'metrics?') return;
    registry
      .clusterMetrics()
      .then((text) => worker.send({ lab: 'metrics', id: m.id, text }))
      .catch((e) =>
        worker.send({ lab: 'metrics', id: m.id, text: `# gathering the workers' metrics failed: ${e.message}\n` }),
      );
  });
}
