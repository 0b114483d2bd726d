/*
 * The certificate a TLS listener of a team's config is served with in the lab: the host's own
 * certificate and key are not the lab's to read, and a client that checks nothing (k6 with
 * insecureSkipTLSVerify, the probe) needs none of theirs. One self-signed pair per folder, made
 * by Debian's openssl, with every server name the config gives as a subject alternative name.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync } from 'node:fs';
import { serviceUser } from '../../stack/privilege.mjs';
import { join } from 'node:path';

/** The pair in `dir` ({cert, key} paths), made once: a P-256 key, valid two days. */
export function labCertificate(dir, names = []) {
  mkdirSync(dir, { recursive: true });
  const cert = join(dir, 'lab-cert.pem');
  const key = join(dir, 'lab-key.pem');
  if (existsSync(cert) && existsSync(key)) return { cert, key };
  const dns = [...new Set(['localhost', ...names.filter((n) => /^[a-z0-9.-]+$/i.test(n))])].slice(0, 50);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=proxy-policy-lab',
      '-addext',
      `subjectAltName=${dns.map((n) => `DNS:${n}`).join(',')},IP:127.0.0.1`,
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  // The services' user reads it (a root runner's nginx runs as `lab`: lab/stack/privilege.mjs), no one else.
  const user = serviceUser();
  if (user) for (const f of [cert, key]) chownSync(f, 0, user.gid);
  chmodSync(key, 0o640);
  chmodSync(cert, 0o644);
  return { cert, key };
}
