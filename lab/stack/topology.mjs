/*
 * Reads docker-compose.yml, the one description of every stack, and answers the runner's
 * questions: which services an experiment has, in what order they start, what each needs.
 */
import { readFileSync } from 'node:fs';
import YAML from 'yaml';

export function loadTopology(file) {
  const doc = YAML.parse(readFileSync(file, 'utf8'), { merge: true });
  const services = {};
  const unavailable = {};
  for (const [name, s] of Object.entries(doc.services || {})) {
    const native = s['x-native'];
    if (!native) throw new Error(`${file}: service ${name} has no x-native block`);
    if (native.unavailable) {
      unavailable[name] = { profiles: s.profiles || [], why: native.unavailable };
      continue;
    }
    for (const key of ['ports', 'command', 'ready']) {
      if (!native[key]) throw new Error(`${file}: service ${name}: x-native.${key} is missing`);
    }
    services[name] = {
      name,
      profiles: s.profiles || [],
      dependsOn: Array.isArray(s.depends_on) ? s.depends_on : Object.keys(s.depends_on || {}),
      ports: native.ports,
      command: native.command,
      validate: native.validate || null,
      // A command the runner runs itself (root in CI) before the service starts: a build the
      // service would otherwise make in the checkout, where it cannot write when it runs as the
      // unprivileged user (lab/stack/privilege.mjs).
      prepare: native.prepare || null,
      ready: native.ready,
      // HTTP POSTs to make once it is ready (InfluxDB: the databases others write to).
      init: native.init || [],
      // A config set to null drops one inherited through a YAML merge.
      configs: Object.fromEntries(Object.entries(native.configs || {}).filter(([, v]) => v !== null)),
      // A folder kept between runs (a store's data), under .lab/data/<service>.
      data: native.data === true,
      // Where Prometheus scrapes the service: {port: <name in ports>, path}.
      metrics: native.metrics || null,
      // The proxy whose seen.log (when it saw each request) the service writes in its folder, read
      // by that proxy's module (lab/policy/proxies/), or null.
      sightings: native.sightings || null,
      // CPU and memory caps, a template like "{{caps}}" (cpu=2% mem=25M; empty: none), run in a
      // cgroup of the service's own (lab/stack/cgroups.mjs).
      caps: native.caps || null,
      // What Docker runs (compose's own keys), for the Kubernetes manifests (lab/k8s/manifests.mjs).
      docker: {
        image: s.image,
        command: s.command || null,
        workingDir: s.working_dir || null,
        volumes: s.volumes || [],
      },
    };
    if (services[name].metrics && !native.ports[services[name].metrics.port]) {
      throw new Error(
        `${file}: service ${name}: x-native.metrics.port '${services[name].metrics.port}' is not one of its ports`,
      );
    }
  }
  return { services, unavailable };
}

/** Prometheus's scrape targets: every service that declares a metrics endpoint, any profile. */
export function scrapeTargets(topology) {
  return Object.values(topology.services)
    .filter((s) => s.metrics)
    .map((s) => ({
      service: s.name,
      profile: s.profiles[0],
      port: s.ports[s.metrics.port],
      path: s.metrics.path,
    }));
}

/** The services of one compose profile, each after the services it depends on. */
export function stackServices(topology, profile) {
  const members = Object.values(topology.services).filter((s) => s.profiles.includes(profile));
  if (members.length === 0) throw new Error(`docker-compose.yml has no services in profile '${profile}'`);
  const order = [];
  const visiting = new Set();
  const visit = (s) => {
    if (order.includes(s)) return;
    if (visiting.has(s.name)) throw new Error(`docker-compose.yml: depends_on cycle through ${s.name}`);
    visiting.add(s.name);
    for (const d of s.dependsOn) {
      const dep = topology.services[d];
      if (!dep) throw new Error(`docker-compose.yml: ${s.name} depends on unknown service ${d}`);
      visit(dep);
    }
    order.push(s);
  };
  members.forEach(visit);
  return order;
}

/** Every port the topology declares, by service: for the port-in-use check and the templates. */
export function portsByService(topology) {
  return Object.fromEntries(Object.values(topology.services).map((s) => [s.name, s.ports]));
}
