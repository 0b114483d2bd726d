/*
 * The certificate a TLS bind of a team's haproxy.cfg is served with in the lab: the lab's own
 * self-signed pair (lab/policy/nginx/cert.mjs), in the one file HAProxy's `crt` reads, the
 * certificate followed by its key, readable as the key is.
 */
import { chmodSync, chownSync, readFileSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { labCertificate } from '../nginx/cert.mjs';

/** The lab's certificate and key in one PEM file in `dir` (made once), for `names`: its path. */
export function labPem(dir, names = []) {
  const pem = join(dir, 'lab-haproxy.pem');
  if (existsSync(pem)) return pem;
  const { cert, key } = labCertificate(dir, names);
  writeFileSync(pem, `${readFileSync(cert, 'utf8')}${readFileSync(key, 'utf8')}`, { mode: 0o600 });
  const was = statSync(key);
  chownSync(pem, was.uid, was.gid);
  chmodSync(pem, was.mode & 0o777);
  return pem;
}
