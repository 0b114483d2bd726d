/*
 * A team's policy's stack as a compose file, for `docker compose up` (`./labw render <name>`):
 * the lab's backend in the node image docker-compose.yml runs its servers in, and the proxy in
 * its official image (its module's `service.image`: lab/policy/proxies/), each running the
 * command the native runner runs. Host networking, as in docker-compose.yml, so the ports are
 * the native ones. The proxy's folder (its rendered config, the lab's certificate, the files it
 * serves, its logs) is mounted where it was rendered and the repository read-only where it is,
 * so every absolute path the config names holds in the container as on the host; both run as
 * the user who rendered them, who owns that folder.
 */
import YAML from 'yaml';
import { proxyNamed } from './proxies/index.mjs';

/** The node image docker-compose.yml runs the lab's servers in (its x-node block). */
export const nodeImageOf = (composeText) =>
  YAML.parse(composeText, { merge: true, maxAliasCount: -1 })['x-node']?.image;

/**
 * The image a service of a policy's stack runs in: its proxy's official one, or the node image
 * for the lab's backend; a refusal where its proxy has none.
 */
export function imageOf(service, nodeImage) {
  const proxy = service.sightings ? proxyNamed(service.sightings) : null;
  if (!proxy) return nodeImage;
  if (!proxy.service.image)
    throw new Error(
      `${service.name}: ${proxy.title} has no official image that runs the lab's config of it (${proxy.service.noImage}): it runs natively only`,
    );
  return proxy.service.image;
}

/**
 * The compose file's text for a policy's rendered services: `rendered` [{service, argv, dir}]
 * (each service of lab/policy/stack.mjs with its command rendered, and its folder), `root` the
 * repository, `user` "uid:gid"; a refusal where its proxy has no official image to run it in.
 */
export function policyCompose(experimentName, rendered, { root, nodeImage, user }) {
  const services = {};
  for (const { service: s, argv, dir } of rendered) {
    services[s.name] = {
      image: imageOf(s, nodeImage),
      network_mode: 'host',
      ...(s.dependsOn.length ? { depends_on: s.dependsOn } : {}),
      user,
      working_dir: root,
      // The whole command: an image's own entrypoint would add to it. Compose reads `$` as its
      // own variables: a command's `$0` is written `$$0`.
      entrypoint: argv.map((a) => a.replaceAll('$', '$$$$')),
      volumes: [`${root}:${root}:ro`, ...(dir ? [`${dir}:${dir}`] : [])],
    };
  }
  const head = `# ${experimentName}: a team's policy's stack, written by ./labw render (lab/policy/compose.mjs).\n`;
  return head + YAML.stringify({ services });
}
