/*
 * The ports a team's policy stack listens on, on 127.0.0.1: its proxy's first listener, the
 * proxy's own port (nginx's counters, Envoy's admin), the backend, and one port more per further
 * place the config listens on (an address and port, or a socket: lab/policy/nginx/move.mjs).
 */
export const POLICY_PORTS = { http: 18200, own: 18201, backend: 18202, more: 18210, most: 18229 };

/** Each place's port, in the order given: {place: port}; more places than ports are refused. */
export function placePorts(places) {
  const more = POLICY_PORTS.most - POLICY_PORTS.more + 1;
  if (places.length > more + 1)
    throw new Error(
      `${places.length} places to listen on: the lab gives a policy ${more + 1} ports (${POLICY_PORTS.http}, ${POLICY_PORTS.more}..${POLICY_PORTS.most})`,
    );
  return Object.fromEntries(places.map((p, i) => [p, i === 0 ? POLICY_PORTS.http : POLICY_PORTS.more + i - 1]));
}
