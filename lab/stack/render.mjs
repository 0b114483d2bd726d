/*
 * Renders config templates and command lines with mustache (logic-less: the knobs decide
 * values, never structure beyond "one block per target").
 */
import Mustache from 'mustache';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { basename, join } from 'node:path';

// Configs are nginx and YAML, not HTML: no escaping.
Mustache.escape = (s) => String(s);

export const renderText = (template, view) => Mustache.render(template, view);

/**
 * The view a service's templates see: the policy knobs, the model's targets, every port, the
 * service's name, where the repository is (`root`: the checkout natively, /lab in Docker), and
 * whether it runs natively (Debian's packages) or in the images of docker-compose.yml; and
 * where to listen (`bind`) and each other service's address (`at.<service>`): all on
 * 127.0.0.1 natively and in Docker's host network, a pod's own interfaces and the services'
 * DNS names on Kubernetes (lab/k8s/manifests.mjs passes `network`).
 */
export function serviceView({
  policy,
  targets,
  ports,
  service,
  prefix = '',
  config = {},
  root = '/lab',
  native = false,
  extra = {},
  network = null,
}) {
  const at = Object.fromEntries(Object.keys(ports).map((name) => [name, network ? network.at(name) : '127.0.0.1']));
  return {
    ...policy,
    ...extra,
    targets,
    svc: ports,
    self: ports[service.name],
    service: service.name,
    experiment: service.profiles?.[0],
    prefix,
    config,
    root,
    native,
    bind: network?.bind ?? '127.0.0.1',
    at,
  };
}

/**
 * Every config of `service`, rendered: {key: {file (its base name), text}}. A config is a
 * template's path in the repository, or (a team's policy, lab/policy/stack.mjs) {file, render(view)}.
 */
export function renderedConfigs(root, service, view) {
  const one = (c) =>
    typeof c === 'string'
      ? { file: basename(c), text: renderText(readFileSync(join(root, c), 'utf8'), view) }
      : { file: c.file, text: c.render(view) };
  return Object.fromEntries(Object.entries(service.configs).map(([key, c]) => [key, one(c)]));
}

/** Renders every config template of `service` into `dir`; returns {key: renderedPath}. */
export function renderConfigs(root, service, view, dir) {
  mkdirSync(dir, { recursive: true });
  const out = {};
  for (const [key, { file, text }] of Object.entries(renderedConfigs(root, service, view))) {
    out[key] = join(dir, file);
    writeFileSync(out[key], text);
  }
  return out;
}

export const renderArgs = (args, view) => args.map((a) => renderText(String(a), view));
