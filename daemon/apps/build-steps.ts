import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LineSplitter } from '../lib/line-splitter.js';
import type { Box, BoxProcess } from '../box/box.js';
import { outputOf } from '../box/box-process.js';
import { packageInBox } from '../box/box-runtime.js';
import { BOX_APP } from '../box/box-spec.js';
import { harnessArgv, isPythonEntrypoint, RESULT_FD } from './harness-command.js';

/** Why a deployment failed, in words for its status_reason. */
export class BuildError extends Error {}

export interface StepOptions {
  /** The app's build box: its code is at /app there. */
  box: Box;
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

/** npm settings whose values are credentials: never shown to an app's box. */
const NPM_SECRET = /(^|:)_(auth|authToken|password)\s*=|^\s*(\/\/[^=]*:)?(username|_auth|_authToken|_password|certfile|keyfile)\s*=/i;

/**
 * The machine's npm settings (/etc/npmrc: its registry, CA file, proxy) as a build box sees them,
 * without any credential: an app's install scripts run there, and they must not learn the host's
 * tokens.
 */
export function buildNpmrc(): [string, string][] {
  const file = '/etc/npmrc';
  if (!existsSync(file)) return [];
  const kept = readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => !NPM_SECRET.test(line))
    .join('\n');
  return [['/etc/npmrc', kept]];
}

/**
 * Runs a program of the build in the box, at /app, its output line by line into the deployment's
 * log, killed on cancel and at the timeout; its exit code, or a BuildError for a cancel or timeout.
 */
async function step(
  what: string,
  argv: string[],
  opts: StepOptions & { timeoutMs: number; onLine?: (line: string) => void; resultFd?: boolean },
): Promise<{ code: number | null; result: Buffer }> {
  // A cancel that came between two steps fires no 'abort' for this one's listener: without this,
  // the next step ran to its end (an app's load that never ends held a daemon stop forever).
  if (opts.signal.aborted) throw new BuildError('cancelled');
  const child: BoxProcess = opts.box.spawn(argv, { env: opts.env, cwd: BOX_APP, ...(opts.resultFd ? { extraFds: [RESULT_FD] } : {}) });
  const line = (l: string) => {
    opts.onLine?.(l);
    opts.log(l);
  };
  const out = new LineSplitter(line);
  const err = new LineSplitter(line);
  child.stdout!.on('data', (c: Buffer) => out.write(c));
  child.stderr!.on('data', (c: Buffer) => err.write(c));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, opts.timeoutMs);
  const cancel = () => child.kill('SIGKILL');
  opts.signal.addEventListener('abort', cancel, { once: true });
  try {
    const result = opts.resultFd ? await outputOf(child) : { ...(await child.exited), fds: {} as Record<number, Buffer> };
    out.end();
    err.end();
    if (opts.signal.aborted) throw new BuildError('cancelled');
    if (timedOut) throw new BuildError(`${what} did not finish within ${Math.round(opts.timeoutMs / 1000)} s`);
    if (result.error)
      throw new BuildError(`${what} could not start: ${result.error.code === 'ENOENT' ? `${argv[0]} is not installed` : result.error.message}`);
    return { code: result.code, result: result.fds[RESULT_FD] ?? Buffer.alloc(0) };
  } finally {
    clearTimeout(timer);
    opts.signal.removeEventListener('abort', cancel);
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
 * else nothing; in the build box, as its user (lifecycle scripts included), on rbrowse's Node.
 * `source`: the unpacked upload on the daemon's side, read only for what to run.
 */
export async function installDependencies(source: string, opts: StepOptions): Promise<void> {
  const pkg = await packageJson(source);
  const locked = existsSync(join(source, 'package-lock.json')) || existsSync(join(source, 'npm-shrinkwrap.json'));
  const deps = ['dependencies', 'devDependencies', 'optionalDependencies'].flatMap((k) => Object.keys((pkg?.[k] as object | undefined) ?? {}));
  if (!pkg || (!locked && deps.length === 0)) {
    opts.log('no dependencies to install');
    return;
  }
  const args = [locked ? 'ci' : 'install', '--no-audit', '--no-fund', '--no-update-notifier'];
  opts.log(`$ npm ${args.join(' ')}`);
  // The first error line that says something (not npm's code, syscall, errno or log location) is the reason.
  let firstError = '';
  const onLine = (line: string) => {
    const m = /^npm (?:error|ERR!)\s*(.*)$/.exec(line);
    if (!firstError && m && m[1] && !/^(code|syscall|errno|path|A complete log)\b/.test(m[1])) firstError = m[1];
  };
  const { code } = await step(`npm ${args[0]}`, ['npm', ...args], { ...opts, timeoutMs: INSTALL_TIMEOUT_MS, onLine });
  if (code !== 0) throw new BuildError(`npm ${args[0]} failed (exit code ${code})${firstError ? `: ${firstError}` : ''}`);
}

/** An app without an @onkernel/sdk of its own gets the daemon's, by a symlink in its node_modules (inside the box). */
export async function linkSdk(opts: StepOptions): Promise<void> {
  const sdk = packageInBox('@onkernel/sdk');
  const script = `if [ -e node_modules/@onkernel/sdk ] || [ -L node_modules/@onkernel/sdk ]; then echo own; else mkdir -p node_modules/@onkernel && ln -s "$1" node_modules/@onkernel/sdk && echo linked; fi`;
  const r = await outputOf(opts.box.spawn(['sh', '-c', script, 'link-sdk', sdk], { env: opts.env, cwd: BOX_APP }));
  if (r.code !== 0) throw new BuildError(`the SDK could not be linked: ${r.stderr.toString().trim()}`);
  opts.log(r.stdout.toString().trim() === 'own' ? 'using the app’s own @onkernel/sdk' : 'linked the daemon’s @onkernel/sdk into node_modules');
}

/**
 * A Python app's dependencies: `pip install --target .python_packages -r requirements.txt` when
 * it has a requirements.txt (pip as the machine has it, with its index settings), else nothing.
 * Kernel's SDK is the daemon's (on PYTHONPATH) unless the app brings its own `kernel` package.
 */
export async function installPythonDependencies(source: string, opts: StepOptions): Promise<void> {
  if (existsSync(join(source, 'requirements.txt'))) {
    const args = ['-m', 'pip', 'install', '--no-input', '--disable-pip-version-check', '--target', '.python_packages', '-r', 'requirements.txt'];
    opts.log(`$ python3 ${args.join(' ')}`);
    let lastError = '';
    const onLine = (line: string) => {
      if (/^ERROR: /.test(line)) lastError ||= line.slice('ERROR: '.length);
      if (/No module named pip/.test(line)) lastError = 'pip is not installed on this machine (Debian: apt-get install python3-pip)';
    };
    const { code } = await step('pip install', ['python3', ...args], { ...opts, timeoutMs: INSTALL_TIMEOUT_MS, onLine });
    if (code !== 0) throw new BuildError(`pip install failed (exit code ${code})${lastError ? `: ${lastError}` : ''}`);
  } else opts.log('no dependencies to install');
  opts.log(existsSync(join(source, 'kernel')) ? 'using the app’s own kernel package' : 'using the daemon’s Kernel Python SDK');
}

/** Loads the entrypoint in the box (the harness's `list`) and answers the apps and actions it registers. */
export async function loadApps(entrypoint: string, opts: StepOptions): Promise<LoadedApp[]> {
  opts.log(`loading ${entrypoint}`);
  const { code, result } = await step(`loading ${entrypoint}`, harnessArgv('list', entrypoint), {
    ...opts,
    timeoutMs: LOAD_TIMEOUT_MS,
    resultFd: true,
  });
  let answer: { type: string; message?: string; apps?: LoadedApp[] } | undefined;
  try {
    answer = result.length ? JSON.parse(result.toString()) : undefined;
  } catch {
    answer = undefined;
  }
  if (answer?.type === 'error') throw new BuildError(answer.message ?? 'the entrypoint failed to load');
  if (code !== 0 || !answer) throw new BuildError(`loading ${entrypoint} failed (exit code ${code}): it exited without registering anything`);
  const apps = answer.apps ?? [];
  const [create, add] = isPythonEntrypoint(entrypoint)
    ? ['kernel.App(name)', '@app.action(name)']
    : ['kernel.app(name)', 'app.action(name, handler)'];
  if (apps.length === 0) throw new BuildError(`${entrypoint} registers no apps: create one with ${create} and add actions with ${add}`);
  const empty = apps.find((a) => a.actions.length === 0);
  if (empty) throw new BuildError(`app ${empty.name} registers no actions: add one with ${add}`);
  return apps;
}
