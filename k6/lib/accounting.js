/*
 * A service's own count, read before and after the load (the application's /counts, the
 * backend's /stats, nginx's /metrics): one GET tagged case=accounting, so that no case's
 * figures hold it, and the run stops if the service cannot say.
 */
import http from 'k6/http';
import { fail } from 'k6';

/** The answer of `url` (its body as text); fails the run, naming `whose` and the status, unless 200. */
export function accountingGet(url, whose) {
  const res = http.get(url, { tags: { case: 'accounting' }, responseType: 'text' });
  if (res.status !== 200) fail(`${whose} ${url} answered ${res.status} ${res.error || ''}`);
  return res;
}
