/*
 * Every request on the wire, counted once more, tagged with the VU that sent it: what the
 * nothing-lost table reads from InfluxDB, where two of k6's http_reqs samples can merge into one
 * point (docs/metrics-and-dashboards.md).
 */
import exec from 'k6/execution';
import { Counter } from 'k6/metrics';

/**
 * The counter, made in the init context of an executor that sends through it. A VU sends one
 * request at a time, so with its id as a tag no two samples are the same point. The tag is on
 * this counter only: on http_reqs it would multiply every trend's series by the VUs. It is not
 * named `vu`: k6's influxdb output turns a tag of that name into a field (its default
 * K6_INFLUXDB_TAGS_AS_FIELDS is vu,iter,url), and fields do not tell points apart.
 */
export function wireCounter() {
  const onWire = new Counter('lab_requests');
  return (res, tags = {}) => onWire.add(1, { ...tags, status: String(res.status), sender: String(exec.vu.idInTest) });
}
