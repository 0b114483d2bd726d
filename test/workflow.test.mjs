// The GitHub workflow (.github/workflows/) passes actionlint, the pinned one `just setup`
// builds; and actionlint is no rubber stamp: a workflow with a broken field fails it. It passes
// checkov too (pinned, installed into the lab's venv by the installer), which fails a workflow
// that writes everything or turns unsafe commands back on; and the supply chain holds: every
// action pinned by commit with its tag beside it, the container by digest, and no fork pull
// request run (a fork's code must never reach a self-hosted runner).
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const actionlint = join(root, '.lab', 'bin', 'actionlint');
const checkov = join(root, '.lab', 'venv', 'bin', 'checkov');
const workflows = join(root, '.github', 'workflows');
const lint = (files) => spawnSync(actionlint, ['-no-color', ...files], { encoding: 'utf8', cwd: root });
// checkov on a folder of workflows, offline (--skip-download: no Prisma Cloud guidelines fetched).
const runCheckov = (dir, args = []) =>
  spawnSync(checkov, ['--framework', 'github_actions', '--skip-download', '--compact', '-d', dir, ...args], {
    encoding: 'utf8',
    cwd: root,
  });
const workflowFiles = () =>
  readdirSync(workflows)
    .filter((f) => /\.ya?ml$/.test(f))
    .map((f) => join(workflows, f));

test('actionlint is installed by just setup', () => {
  assert.ok(existsSync(actionlint), `no ${actionlint}: run ./labw setup`);
});

test('the workflows pass actionlint', () => {
  const files = readdirSync(workflows)
    .filter((f) => /\.ya?ml$/.test(f))
    .map((f) => join(workflows, f));
  assert.ok(files.length > 0);
  const r = lint(files);
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('a broken workflow fails actionlint: a job without runs-on, an unknown context', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lab-wf-'));
  try {
    const text = readFileSync(join(workflows, 'lab.yml'), 'utf8')
      .replace('    runs-on: ubuntu-24.04\n', '')
      .replace('${{ github.run_id }}-${{ github.run_attempt }}', '${{ github.no_such_field }}');
    const file = join(dir, 'broken.yml');
    writeFileSync(file, text);
    const r = lint([file]);
    assert.notEqual(r.status, 0);
    assert.match(r.stdout, /runs-on/);
    assert.match(r.stdout, /no_such_field/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('checkov is installed by just setup, and passes the workflows with nothing skipped', () => {
  assert.ok(existsSync(checkov), `no ${checkov}: the installer puts checkov in the lab's venv (run ./labw setup)`);
  const r = runCheckov(workflows, ['-o', 'json']);
  assert.equal(r.status, 0, r.stdout.slice(-3000) + r.stderr.slice(-3000));
  const report = JSON.parse(r.stdout);
  const { summary, results } = Array.isArray(report) ? report[0] : report;
  assert.equal(summary.failed, 0);
  assert.equal(summary.skipped, 0, 'a skip would need its reason beside it (# checkov:skip=CKV_GHA_N:reason)');
  const passed = new Set(results.passed_checks.map((c) => c.check_id));
  for (const id of ['CKV_GHA_1', 'CKV_GHA_2', 'CKV_GHA_3', 'CKV_GHA_7', 'CKV2_GHA_1'])
    assert.ok(passed.has(id), `${id} passed`);
});

test('checkov fails a workflow that writes everything and turns unsafe commands back on', () => {
  assert.ok(existsSync(checkov), `no ${checkov}: run ./labw setup`);
  const dir = mkdtempSync(join(tmpdir(), 'lab-wf-checkov-'));
  try {
    const text = readFileSync(join(workflows, 'lab.yml'), 'utf8')
      .replace('permissions:\n  contents: read\n', 'permissions: write-all\n')
      .replace(
        '    timeout-minutes: 90\n',
        '    timeout-minutes: 90\n    env:\n      ACTIONS_ALLOW_UNSECURE_COMMANDS: "true"\n',
      );
    assert.match(text, /write-all[^]*ACTIONS_ALLOW_UNSECURE_COMMANDS/);
    // checkov takes a file for a workflow only under .github/workflows/.
    mkdirSync(join(dir, '.github', 'workflows'), { recursive: true });
    writeFileSync(join(dir, '.github', 'workflows', 'bad.yml'), text);
    const r = runCheckov(dir);
    assert.notEqual(r.status, 0, r.stdout);
    assert.match(r.stdout, /CKV2_GHA_1[^\n]*\n\s*FAILED/);
    assert.match(r.stdout, /CKV_GHA_1[^\n]*\n\s*FAILED/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('supply chain: actions pinned by commit (tag beside), the container by digest, no fork pull request runs', () => {
  for (const file of workflowFiles()) {
    const text = readFileSync(file, 'utf8');
    const uses = [...text.matchAll(/^\s*(?:-\s+)?uses:\s*(.+)$/gm)].map((m) => m[1].trim());
    assert.ok(uses.length > 0, file);
    for (const u of uses)
      assert.match(
        u,
        /^[\w.-]+\/[\w./-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$/,
        `${file}: '${u}' is not pinned by commit with its tag in a comment`,
      );
    for (const m of text.matchAll(/^\s*image:\s*(\S+)/gm))
      assert.match(m[1], /@sha256:[0-9a-f]{64}$/, `${file}: ${m[1]} not by digest`);
    // Every job that a pull request can start runs only for this repository's own branches.
    const jobs = text.slice(text.indexOf('\njobs:'));
    const jobNames = [...jobs.matchAll(/^ {2}([\w-]+):\s*$/gm)].map((m) => m[1]);
    assert.ok(jobNames.length > 0, file);
    for (const job of jobNames) {
      const body = jobs.slice(jobs.indexOf(`\n  ${job}:`) + 1).split(/\n {2}(?=[\w-]+:\s*\n)/)[0];
      assert.match(
        body,
        /\n {4}if: github\.event_name != 'pull_request' \|\| github\.event\.pull_request\.head\.repo\.full_name == github\.repository\n/,
        `${file}: job ${job} has no guard against fork pull requests`,
      );
    }
    assert.match(text, /Fork pull requests must not run on self-hosted runners/, `${file}: says why`);
  }
});
