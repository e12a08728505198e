/**
 * The docs stay true where a test can keep them so. Every code example in README.md and docs/ is
 * a file that runs as written, in a fresh project set up exactly as the text says, on every Node
 * the text claims (20 and up: the machine's Node 20 and rbrowse's Node 24), against a real daemon
 * and pages that exist here. And every setting the code reads from the environment is in the
 * configuration table.
 *
 * The markers a doc carries, each on the line before a fenced block:
 * - `<!-- example-setup -->` (sh): how the project is made; a doc without one uses README.md's;
 * - `<!-- example-shell -->` (sh): commands the reader runs at that point;
 * - `<!-- example: PATH -->`: a file to save as PATH and run (`node PATH`, or `npx playwright
 *   test` for a spec); `<!-- example: PATH (saved) -->` is only saved, for a later step.
 * A fenced block of code with no marker is a failure: it would be an example no test runs.
 */
import assert from 'node:assert/strict';
import { copyFile, mkdtemp, readdir, readFile, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { execa } from 'execa';
import { ROOT, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { packFreshClone } from './helpers/package.js';

const DOCS = ['README.md', ...(await readdir(join(ROOT, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const CODE_LANGS = ['js', 'mjs', 'ts', 'mts', 'cjs', 'javascript', 'typescript', 'py', 'python'];

type Step = { kind: 'setup' | 'shell'; code: string; where: string } | { kind: 'file'; path: string; run: boolean; code: string; where: string };

/** A doc's example steps, in order; an unmarked code block is reported in `unmarked`. */
function stepsOf(doc: string, text: string): { steps: Step[]; unmarked: string[] } {
  const steps: Step[] = [];
  const unmarked: string[] = [];
  for (const m of text.matchAll(/(?:<!-- (example-setup|example-shell|example: ([^\n]*?)) -->\n)?```(\w*)\n([\s\S]*?)\n```/g)) {
    const where = `${doc}:${text.slice(0, m.index).split('\n').length}`;
    const [, marker, file, lang, code] = m;
    if (!marker) {
      if (CODE_LANGS.includes(lang!)) unmarked.push(where);
      continue;
    }
    if (marker === 'example-setup' || marker === 'example-shell')
      steps.push({ kind: marker === 'example-setup' ? 'setup' : 'shell', code: code!, where });
    else {
      const saved = /\s+\(saved\)$/.test(file!);
      steps.push({ kind: 'file', path: file!.replace(/\s+\(saved\)$/, ''), run: !saved, code: code!, where });
    }
  }
  return { steps, unmarked };
}

/** The bash that does what a reader of the doc does: its steps, each run echoing a marker first. */
function scriptOf(steps: Step[]): string {
  const lines = ['set -euo pipefail', 'examples_root=$PWD'];
  for (const step of steps) {
    lines.push(`echo ${JSON.stringify(`::step ${step.where}`)}`);
    // Each set-up starts a project of its own, where the reader started.
    if (step.kind === 'setup') lines.push('cd "$examples_root"');
    if (step.kind !== 'file') {
      lines.push(step.code);
      continue;
    }
    const delimiter = 'RBROWSE_EXAMPLE_EOF';
    lines.push(`mkdir -p "$(dirname ${JSON.stringify(step.path)})"`, `cat > ${JSON.stringify(step.path)} <<'${delimiter}'`, step.code, delimiter);
    if (!step.run) continue;
    const run = /\.spec\.\w+$/.test(step.path) ? `npx playwright test ${JSON.stringify(step.path)}` : `node ${JSON.stringify(step.path)}`;
    // Each run must print something: an example that says nothing shows nothing worked.
    lines.push(`out=$(${run} 2>&1) || { printf '%s\\n' "$out"; exit 1; }`, 'printf "%s\\n" "$out"', '[ -n "$out" ]');
  }
  return lines.join('\n');
}

describe('the docs', () => {
  let d: TestDaemon;
  let work: string;
  let tarball: string;
  const nodes: { name: string; dir: string }[] = [];
  before(async () => {
    d = await startTestDaemon();
    work = await mkdtemp(join(tmpdir(), 'rbrowse-doc-examples-'));
    // The package the docs install (`npm install -D ../rbrowse-<version>.tgz`), beside each project.
    tarball = await packFreshClone(work);
    const machine = (await execa('sh', ['-c', 'command -v node'], { env: { PATH: '/usr/local/bin:/usr/bin:/bin' } })).stdout.trim();
    nodes.push({ name: `the machine's Node (${(await execa(machine, ['--version'])).stdout.trim()})`, dir: dirname(machine) });
    nodes.push({ name: "rbrowse's Node 24", dir: dirname(await realpath(join(ROOT, 'node_modules/.bin/node'))) });
  });
  after(async () => {
    await rm(work, { recursive: true, force: true });
    await d?.stop();
  });

  test('every code block in README.md and docs/ is a marked example', async () => {
    const unmarked: string[] = [];
    for (const doc of DOCS) unmarked.push(...stepsOf(doc, await readFile(join(ROOT, doc), 'utf8')).unmarked);
    assert.deepEqual(unmarked, []);
  });

  test('every example runs as written, in a project set up as its doc says, on Node 20 and 24', async () => {
    const readme = stepsOf('README.md', await readFile(join(ROOT, 'README.md'), 'utf8')).steps;
    // The README's first project (its "From code") is the one the other docs' examples assume:
    // they run in it, after the README's own examples there and before its next project.
    const second = readme.findIndex((s, i) => s.kind === 'setup' && readme.slice(0, i).some((p) => p.kind === 'setup'));
    assert.ok(
      readme.some((s) => s.kind === 'setup'),
      'README.md sets up a project for the examples',
    );
    const inReadmeProject: Step[] = [];
    const ownProjects: Step[] = [];
    for (const doc of DOCS.filter((d) => d !== 'README.md')) {
      const { steps } = stepsOf(doc, await readFile(join(ROOT, doc), 'utf8'));
      (steps.some((s) => s.kind === 'setup') ? ownProjects : inReadmeProject).push(...steps);
    }
    const all = [
      ...readme.slice(0, second < 0 ? undefined : second),
      ...inReadmeProject,
      ...(second < 0 ? [] : readme.slice(second)),
      ...ownProjects,
    ];
    const examples = all.filter((s) => s.kind === 'file' && s.run).length;
    assert.ok(examples >= 15, `${examples} examples`);
    for (const node of nodes) {
      const parent = await mkdtemp(join(work, 'examples-'));
      await copyFile(tarball, join(parent, basename(tarball)));
      // A user's shell: this Node first, rbrowse on PATH as the README's set-up leaves it, no npm script's settings.
      const PATH = [
        node.dir,
        join(ROOT, 'bin'),
        ...(process.env.PATH ?? '').split(':').filter((p) => p && !p.includes('/node_modules/.bin') && p !== node.dir),
      ].join(':');
      const env: Record<string, string> = { ...d.env, PATH, npm_config_prefer_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false' };
      const r = await execa('bash', ['-c', scriptOf(all)], { cwd: parent, env, extendEnv: false, reject: false, timeout: 900_000, all: true });
      const output = String(r.all);
      const failedAt = [...output.matchAll(/^::step (.*)$/gm)].at(-1)?.[1];
      assert.equal(r.exitCode, 0, `on ${node.name}, at ${failedAt}:\n${output.slice(-4000)}`);
      await rm(parent, { recursive: true, force: true });
    }
    assert.deepEqual((await d.api('GET', '/browsers')).body, [], 'the examples delete what they create');
  });

  test('every environment variable the code reads is in the configuration table', async () => {
    const table = await readFile(join(ROOT, 'docs/configuration.md'), 'utf8');
    // Set by the daemon for programs of its own, never by a user: the box agent's uids, the app
    // harness's invocation, payload and result descriptor.
    const internal = [
      'RBROWSE_BOX_UID',
      'RBROWSE_BOX_GID',
      'RBROWSE_BOX_SINGLE_UID',
      'RBROWSE_INVOCATION_ID',
      'RBROWSE_PAYLOAD',
      'RBROWSE_RESULT_FD',
      'RBROWSE_INHERITED_FDS_CLOSED',
    ];
    const read = new Set<string>();
    const walk = async (rel: string): Promise<void> => {
      for (const entry of await readdir(join(ROOT, rel), { withFileTypes: true })) {
        const path = `${rel}/${entry.name}`;
        if (entry.isDirectory()) await walk(path);
        else if (/\.(ts|mts|mjs|cjs)$/.test(entry.name) || (rel === 'bin' && !entry.name.includes('.'))) {
          const src = await readFile(join(ROOT, path), 'utf8');
          // process.env.X, env['X'], ${X} in shell, and names in quotes (settings read through a helper).
          for (const m of src.matchAll(/(?:\benv\.|\benv\[['"`]|['"`]|\$\{)((?:RBROWSE|KERNEL)_[A-Z0-9_]+)\b/g)) read.add(m[1]!);
        }
      }
    };
    for (const rel of ['daemon', 'cli', 'src', 'bin']) await walk(rel);
    assert.ok(read.size >= 30, `found ${read.size} settings read`);
    // A prefix (RBROWSE_SESSION for RBROWSE_SESSION_MEMORY and the rest) counts when its settings are there.
    const documented = (name: string) => table.includes(`\`${name}\``) || table.includes(`\`${name}_`);
    const missing = [...read].filter((name) => !internal.includes(name) && !documented(name)).sort();
    assert.deepEqual(missing, [], 'settings read but not in docs/configuration.md');
  });
});
