/*
 * What k6 itself costs, for sizing its pods (`just bench k6`): an open load at RATE r/s for
 * DURATION against a URL that answers at once, or VUS virtual users that each make a request
 * every PAUSE seconds (what holding VUs costs). The lab reads k6's CPU and memory from /proc.
 */
import http from 'k6/http';
import { sleep } from 'k6';

export const options = {
  scenarios: __ENV.VUS
    ? { held: { executor: 'constant-vus', vus: Number(__ENV.VUS), duration: __ENV.DURATION } }
    : {
        open: {
          executor: 'constant-arrival-rate',
          rate: Number(__ENV.RATE),
          timeUnit: '1s',
          duration: __ENV.DURATION,
          preAllocatedVUs: 100,
          maxVUs: 400,
        },
      },
  discardResponseBodies: true,
};

export default function () {
  http.get(__ENV.URL);
  if (__ENV.VUS) sleep(Number(__ENV.PAUSE));
}

export function handleSummary(data) {
  return { [__ENV.OUT]: JSON.stringify(data) };
}
