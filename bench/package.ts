/**
 * rbrowse as a package, as its users get it: the tarball `npm pack` makes of a fresh clone; the
 * start of `rbrowse --version` from a global install against `node -e 0` of the same machine
 * Node in the same run; `npx rbrowse --version` in a project that installed it against the
 * global one, and against npx running a bin of nothing but a shebang (npx's own floor); and the
 * time from `npm i -g <tarball>` to a first session (with npm's cache warm, as on a machine that
 * has installed packages before; the system packages already there).
 *
 *   npm run bench:package [-- --rounds 15]
 */
import { chmod, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { execa } from 'execa';
import { findMarkedProcesses, sleep } from '../daemon/lib/procs.js';
import { cleanEnv } from '../test/helpers/daemon.js';
import { freshProject, npmInstall, packFreshClone } from '../test/helpers/package.js';
import { load, progress, runBench } from './lifecycle.js';
import { renderTable, summarize, type Comparison } from './stats.js';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const ROUNDS = arg('--rounds', 15);

/** Milliseconds of each run of `argv`, alternating between the commands so load drifts alike on all. */
async function timeEach(commands: Record<string, { argv: string[]; cwd?: string }>, env: Record<string, string>): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = Object.fromEntries(Object.keys(commands).map((k) => [k, []]));
  // One untimed run each: the first start reads the files from disk and fills the compile cache.
  for (const { argv, cwd } of Object.values(commands)) await execa(argv[0]!, argv.slice(1), { env, extendEnv: false, cwd });
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, { argv, cwd }] of Object.entries(commands)) {
      const started = performance.now();
      await execa(argv[0]!, argv.slice(1), { env, extendEnv: false, cwd });
      out[name]!.push(performance.now() - started);
    }
  }
  return out;
}

runBench(async (cleanups) => {
  const loadBefore = load();
  const work = await mkdtemp(join(tmpdir(), 'rbrowse-bench-package-'));
  cleanups.push(() => rm(work, { recursive: true, force: true }));
  progress('npm pack of a fresh clone');
  const tarball = await packFreshClone(work);
  const size = (await stat(tarball)).size;
  const unpacked = (await execa('tar', ['tzvf', tarball])).stdout.split('\n').reduce((sum, line) => sum + Number(line.split(/\s+/)[2] ?? 0), 0);

  const home = join(work, 'home');
  await mkdir(home);
  const env = cleanEnv(join(home, '.rbrowse'));
  env.HOME = home;
  env.PATH = `${join(work, 'global', 'bin')}:${(env.PATH ?? '')
    .split(':')
    .filter((p) => !p.includes('/node_modules/.bin'))
    .join(':')}`;
  delete env.RBROWSE_HOME;
  const rbrowse = join(work, 'global', 'bin', 'rbrowse');
  cleanups.push(async () => {
    await execa(rbrowse, ['daemon', 'stop'], { env, extendEnv: false, reject: false });
    for (let i = 0; i < 100 && (await findMarkedProcesses(join(home, '.rbrowse'))).length; i++) await sleep(100);
  });

  progress('npm i -g <tarball>, then a first session');
  const installStarted = performance.now();
  await npmInstall(work, ['-g', '--prefix', join(work, 'global'), tarball], env);
  const installed = performance.now() - installStarted;
  const created = await execa(rbrowse, ['create', '--headless', '--json'], { env, extendEnv: false });
  const toSession = performance.now() - installStarted;
  await execa(rbrowse, ['rm', JSON.parse(created.stdout).session_id], { env, extendEnv: false });

  progress('npm i -D <tarball> in a project');
  const project = await freshProject();
  cleanups.push(() => rm(project, { recursive: true, force: true }));
  await npmInstall(project, ['-D', tarball], env);
  // npx's own cost: a bin that is only a shebang line and an exit, installed the same way.
  const noop = join(work, 'noop');
  await mkdir(join(noop, 'bin'), { recursive: true });
  await writeFile(join(noop, 'package.json'), JSON.stringify({ name: 'noop-bin', version: '1.0.0', bin: { 'noop-bin': 'bin/noop' } }));
  await writeFile(join(noop, 'bin', 'noop'), '#!/bin/sh\necho 1.0.0\n');
  await chmod(join(noop, 'bin', 'noop'), 0o755);
  await npmInstall(project, ['-D', noop], env);

  progress(`timing ${ROUNDS} rounds of each start`);
  const t = await timeEach(
    {
      global: { argv: [rbrowse, '--version'] },
      nodeE0: { argv: ['node', '-e', '0'] },
      npx: { argv: ['npx', 'rbrowse', '--version'], cwd: project },
      npxNoop: { argv: ['npx', 'noop-bin'], cwd: project },
    },
    env,
  );
  const s = Object.fromEntries(Object.entries(t).map(([k, v]) => [k, summarize(v)]));
  const rows: Comparison[] = [
    { metric: 'rbrowse --version (global) vs node -e 0', unit: 'ms', rbrowse: s.global!, raw: s.nodeE0!, maxP50: 100 },
    { metric: 'npx rbrowse --version (project) vs global', unit: 'ms', rbrowse: s.npx!, raw: s.global!, goal: 1.5 },
    { metric: 'npx rbrowse --version vs npx of a no-op bin', unit: 'ms', rbrowse: s.npx!, raw: s.npxNoop! },
  ];
  console.log(renderTable(rows));
  console.log('');
  console.log(`tarball: ${(size / 1e6).toFixed(2)} MB (${(unpacked / 1e6).toFixed(1)} MB unpacked)`);
  console.log(`npm i -g <tarball>: ${(installed / 1000).toFixed(1)} s; to a first session: ${(toSession / 1000).toFixed(1)} s (goal <= 60 s)`);
  console.log(`load average: ${loadBefore} before, ${load()} after`);
});
