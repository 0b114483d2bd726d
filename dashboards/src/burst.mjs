/*
 * burst: does nginx's limit_req at 3 r/s, one queue size per location, accept, limit and delay
 * as the model says? k6's view beside nginx's own counters, and the longest wait against the model's.
 */
import { limiterBoard, nginxCounted } from './lib.mjs';

export default () =>
  limiterBoard('burst', 'nginx limit_req at 3 r/s, one queue size per location (seed 003).', [
    nginxCounted('burst-nginx'),
  ]);
