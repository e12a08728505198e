import { existsSync } from 'node:fs';
import { lstat, mkdir, readFile, symlink } from 'node:fs/promises';
import { findPackageJSON } from 'node:module';
import { dirname, join } from 'node:path';
import { execa, type Result } from 'execa';
import { harnessArgs, NODE_BINARY } from './harness-command.js';

/** Why a deployment failed, in words for its status_reason. */
export class BuildError extends Error {}

export interface StepOptions {
  env: Record<string, string>;
  signal: AbortSignal;
  /** One line of output for the deployment's log events. */
  log: (line: string) => void;
}

export interface LoadedApp {
  name: string;
  actions: { name: string }[];
}

const INSTALL_TIMEOUT_MS = 15 * 60_000;
const LOAD_TIMEOUT_MS = 120_000;

const SDK_DIR = dirname(findPackageJSON('@onkernel/sdk', import.meta.url)!);

/** Options shared by the build's child processes: output line by line into the log, killed on cancel. */
function childOptions(dir: string, opts: StepOptions, timeout: number) {
  // execa calls a generator once per line; yielding nothing keeps no copy of the output.
  const toLog = function* (line: unknown) {
    opts.log(String(line));
  };
  return {
    cwd: dir,
    env: opts.env,
    extendEnv: false,
    stdin: 'ignore',
    stdout: toLog,
    stderr: toLog,
    reject: false,
    cancelSignal: opts.signal,
    forceKillAfterDelay: 3000,
    timeout,
  } as const;
}

function throwIfFailed(r: Result, what: string, signal: AbortSignal, timeoutMs: number, detail = ''): void {
  if (signal.aborted || r.isCanceled) throw new BuildError('cancelled');
  if (r.timedOut) throw new BuildError(`${what} did not finish within ${Math.round(timeoutMs / 1000)} s`);
  if ((r as { code?: string }).code === 'ENOENT') throw new BuildError(`${what} could not start: ${r.shortMessage}`);
  if (r.exitCode !== 0) {
    throw new BuildError(`${what} failed (exit code ${r.exitCode ?? r.signal})${detail ? `: ${detail}` : ''}`);
  }
}

async function packageJson(dir: string): Promise<Record<string, unknown> | undefined> {
  const file = join(dir, 'package.json');
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new BuildError(`package.json is not valid JSON: ${(err as Error).message}`);
  }
}

/**
 * `npm ci` when the app has a lockfile, else `npm install` when package.json lists dependencies,
 * else nothing. npm runs on the daemon's Node (first on the PATH of `env`).
 */
export async function installDependencies(dir: string, opts: StepOptions): Promise<void> {
  const pkg = await packageJson(dir);
  const locked = existsSync(join(dir, 'package-lock.json')) || existsSync(join(dir, 'npm-shrinkwrap.json'));
  const deps = ['dependencies', 'devDependencies', 'optionalDependencies'].flatMap((k) =>
    Object.keys((pkg?.[k] as object | undefined) ?? {}),
  );
  if (!pkg || (!locked && deps.length === 0)) {
    opts.log('no dependencies to install');
    return;
  }
  const args = [locked ? 'ci' : 'install', '--no-audit', '--no-fund', '--no-update-notifier'];
  opts.log(`$ npm ${args.join(' ')}`);
  // The first error line that says something (not npm's code, syscall, errno or log location) is the reason.
  let firstError = '';
  const log = (line: string) => {
    const m = /^npm (?:error|ERR!)\s*(.*)$/.exec(line);
    if (!firstError && m && m[1] && !/^(code|syscall|errno|path|A complete log)\b/.test(m[1])) firstError = m[1];
    opts.log(line);
  };
  const r = await execa('npm', args, childOptions(dir, { ...opts, log }, INSTALL_TIMEOUT_MS));
  throwIfFailed(r, `npm ${args[0]}`, opts.signal, INSTALL_TIMEOUT_MS, firstError);
}

/** An app without an @onkernel/sdk of its own gets the daemon's, by a symlink in its node_modules. */
export async function linkSdk(dir: string, log: (line: string) => void): Promise<void> {
  const target = join(dir, 'node_modules', '@onkernel', 'sdk');
  if (await lstat(target).catch(() => undefined)) {
    log('using the app’s own @onkernel/sdk');
    return;
  }
  await mkdir(dirname(target), { recursive: true });
  await symlink(SDK_DIR, target, 'dir');
  log('linked the daemon’s @onkernel/sdk into node_modules');
}

/** Loads the entrypoint in a child (the harness's `list`) and answers the apps and actions it registers. */
export async function loadApps(dir: string, entrypoint: string, opts: StepOptions): Promise<LoadedApp[]> {
  opts.log(`loading ${entrypoint}`);
  const r = await execa(NODE_BINARY, harnessArgs('list', entrypoint), {
    ...childOptions(dir, opts, LOAD_TIMEOUT_MS),
    ipc: true,
    serialization: 'json',
  });
  const answer = r.ipcOutput[0] as { type: string; message?: string; apps?: LoadedApp[] } | undefined;
  if (answer?.type === 'error') throw new BuildError(answer.message ?? 'the entrypoint failed to load');
  throwIfFailed(r, `loading ${entrypoint}`, opts.signal, LOAD_TIMEOUT_MS, 'it exited without registering anything');
  const apps = answer?.apps ?? [];
  if (apps.length === 0) {
    throw new BuildError(`${entrypoint} registers no apps: create one with kernel.app(name) and add actions with app.action(name, handler)`);
  }
  const empty = apps.find((a) => a.actions.length === 0);
  if (empty) throw new BuildError(`app ${empty.name} registers no actions: add one with app.action(name, handler)`);
  return apps;
}
