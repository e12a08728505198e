/**
 * The docs stay true where a test can keep them so: every code block marked `<!-- example -->` in
 * README.md and docs/ runs, as a reader would run it (after `eval "$(rbrowse env)"`), against a
 * real daemon; and every setting the code reads from the environment is in the configuration table.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { execa } from 'execa';
import { ROOT, startTestDaemon, type TestDaemon } from './helpers/daemon.js';

const DOCS = ['README.md', ...(await readdir(join(ROOT, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** The code blocks marked as examples: [where, language, code]. */
async function examples(): Promise<[string, string, string][]> {
  const found: [string, string, string][] = [];
  for (const doc of DOCS) {
    const text = await readFile(join(ROOT, doc), 'utf8');
    for (const m of text.matchAll(/<!-- example -->\n```(\w+)\n([\s\S]*?)\n```/g)) {
      found.push([`${doc}:${text.slice(0, m.index).split('\n').length + 1}`, m[1]!, m[2]!]);
    }
  }
  return found;
}

describe('the docs', () => {
  let d: TestDaemon;
  let dir: string;
  before(async () => {
    d = await startTestDaemon();
    // Inside the project, so the examples' imports resolve from its node_modules as a user's would.
    dir = await mkdtemp(join(ROOT, 'node_modules', '.doc-examples-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
    await d?.stop();
  });

  test('every example in README.md and docs/ runs as written', async () => {
    const all = await examples();
    assert.ok(all.length >= 2, `found ${all.length} examples`);
    for (const [where, lang, code] of all) {
      assert.ok(['ts', 'js'].includes(lang), `${where}: an example in ${lang} has no runner`);
      const file = join(dir, `example-${all.findIndex((e) => e[0] === where)}.mts`);
      await writeFile(file, code);
      const run = await execa(join(ROOT, 'node_modules/.bin/node'), ['--import', 'tsx', file], {
        cwd: ROOT,
        env: { ...d.env, KERNEL_BASE_URL: d.baseUrl, KERNEL_API_KEY: d.apiKey },
        extendEnv: false,
        reject: false,
        timeout: 120_000,
      });
      assert.equal(run.exitCode, 0, `${where}: ${run.stderr || run.stdout}`);
      assert.notEqual(run.stdout.trim(), '', `${where} printed nothing`);
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
    ];
    const read = new Set<string>();
    const walk = async (rel: string): Promise<void> => {
      for (const entry of await readdir(join(ROOT, rel), { withFileTypes: true })) {
        const path = `${rel}/${entry.name}`;
        if (entry.isDirectory()) await walk(path);
        else if (/\.(ts|mts|mjs)$/.test(entry.name)) {
          const src = await readFile(join(ROOT, path), 'utf8');
          // process.env.X, env['X'], and names in quotes (settings read through a helper).
          for (const m of src.matchAll(/(?:\benv\.|\benv\[['"`]|['"`])((?:RBROWSE|KERNEL)_[A-Z0-9_]+)\b/g)) read.add(m[1]!);
        }
      }
    };
    for (const rel of ['daemon', 'cli', 'src']) await walk(rel);
    assert.ok(read.size >= 30, `found ${read.size} settings read`);
    // A prefix (RBROWSE_SESSION for RBROWSE_SESSION_MEMORY and the rest) counts when its settings are there.
    const documented = (name: string) => table.includes(`\`${name}\``) || table.includes(`\`${name}_`);
    const missing = [...read].filter((name) => !internal.includes(name) && !documented(name)).sort();
    assert.deepEqual(missing, [], 'settings read but not in docs/configuration.md');
  });
});
