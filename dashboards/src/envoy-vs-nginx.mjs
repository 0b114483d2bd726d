/*
 * envoy-vs-nginx: at the same long-run rate, how do Envoy's token bucket and nginx's leaky bucket
 * differ in what they accept, limit and make wait? k6's view beside each proxy's own counters.
 */
import { limiterBoard, envoyCounted, nginxCounted } from './lib.mjs';

export default () =>
  limiterBoard(
    'envoy-vs-nginx',
    "Envoy's token bucket beside nginx's leaky bucket at the same long-run rate (seed 002).",
    [envoyCounted('envoy-vs-nginx-envoy'), nginxCounted('envoy-vs-nginx-nginx')],
  );
