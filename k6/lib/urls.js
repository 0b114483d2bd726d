/*
 * Where a k6 script sends: each service's base URL. Its own module, light enough for every VU
 * of k6/lib/prepared.js to evaluate (it imports none of the model).
 */
// The services' ports, from docker-compose.yml (services.json is generated from it).
const services = JSON.parse(open('./services.json')).httpPorts;

export function json(name, fallback) {
  try {
    return __ENV[name] ? JSON.parse(__ENV[name]) : fallback;
  } catch (e) {
    throw new Error(`${name} is not JSON: ${e.message}`, { cause: e });
  }
}

/**
 * Base URL per service: LAB_BASE_URLS (the runner passes it; by hand, any address per service:
 * '{"burst-nginx":"http://h:80"}'), else BASE_URL (scheme and host, 127.0.0.1 by default) with
 * the topology's ports.
 */
export function baseUrls() {
  const host = (__ENV.BASE_URL || 'http://127.0.0.1').replace(/\/+$/, '');
  const defaults = Object.fromEntries(Object.entries(services).map(([s, port]) => [s, `${host}:${port}`]));
  return { ...defaults, ...json('LAB_BASE_URLS', {}) };
}
