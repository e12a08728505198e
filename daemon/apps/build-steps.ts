import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import semver from 'semver';
import { tarOf } from '../lib/archive/tar-stream.js';
import { FileOps } from '../box/box-files.js';
import { LineSplitter } from '../lib/line-splitter.js';
import type { Box, BoxProcess } from '../box/box.js';
import { outputOf } from '../box/box-process.js';
import { packageInBox } from '../box/box-runtime.js';
import { BOX_APP, BOX_NODE, BOX_USER } from '../box/box-spec.js';
import { BOX_NPMRC, type NpmSettings } from './npm-settings.js';
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
const FETCH_TIMEOUT_MS = 10 * 60_000;
const LOAD_TIMEOUT_MS = 120_000;

/**
 * Runs a program of the build in the box, at /app, its output line by line into the deployment's
 * log, killed on cancel and at the timeout; its exit code, or a BuildError for a cancel or timeout.
 */
async function step(
  what: string,
  argv: string[],
  opts: StepOptions & { timeoutMs: number; onLine?: (line: string) => void; resultFd?: boolean; stdin?: string },
): Promise<{ code: number | null; result: Buffer }> {
  // A cancel that came between two steps fires no 'abort' for this one's listener: without this,
  // the next step ran to its end (an app's load that never ends held a daemon stop forever).
  if (opts.signal.aborted) throw new BuildError('cancelled');
  const child: BoxProcess = opts.box.spawn(argv, {
    env: opts.env,
    cwd: BOX_APP,
    ...(opts.resultFd ? { extraFds: [RESULT_FD] } : {}),
    ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}),
  });
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

/** The first of npm's error lines that says something (not its code, syscall, errno or log location). */
function npmErrorCatcher(): { onLine: (line: string) => void; first: () => string; all: () => string[] } {
  const lines: string[] = [];
  return {
    onLine(line) {
      const m = /^npm (?:error|ERR!)\s*(.*)$/.exec(line);
      if (m?.[1] && !/^(code|syscall|errno|path|A complete log)\b/.test(m[1])) lines.push(m[1]);
    },
    first: () => lines[0] ?? '',
    all: () => lines,
  };
}

/** npm's words for a registry it could not reach (as opposed to one that answered no). */
const UNREACHABLE = /ENOTFOUND|ECONNREFUSED|EAI_AGAIN|ETIMEDOUT|ECONNRESET|ENETUNREACH|EHOSTUNREACH|network|socket hang up/i;

/** A dependency npm must fetch from elsewhere than a registry, and may have to build with npm (git, a path, a URL). */
const NOT_FROM_A_REGISTRY = /^(git\+|git:|github:|gitlab:|bitbucket:|gist:|file:|link:|https?:|\.{0,2}\/|~\/)|^[\w.-]+\/[\w.-]+(#.*)?$/;

interface AppPackage {
  pkg?: Record<string, unknown>;
  lock?: { packages?: Record<string, { version?: string; resolved?: string; integrity?: string; link?: boolean }> };
  lockName?: string;
}

async function appPackage(source: string): Promise<AppPackage> {
  const pkg = await packageJson(source);
  for (const lockName of ['npm-shrinkwrap.json', 'package-lock.json']) {
    const file = join(source, lockName);
    if (!existsSync(file)) continue;
    try {
      return { pkg, lock: JSON.parse(await readFile(file, 'utf8')) as AppPackage['lock'], lockName };
    } catch (err) {
      throw new BuildError(`${lockName} is not valid JSON: ${(err as Error).message}`);
    }
  }
  return { pkg };
}

const DEP_FIELDS = ['dependencies', 'devDependencies', 'optionalDependencies'] as const;

function specsOf(app: AppPackage): string[] {
  const specs = DEP_FIELDS.flatMap((k) => Object.values((app.pkg?.[k] as Record<string, string> | undefined) ?? {}));
  for (const [path, entry] of Object.entries(app.lock?.packages ?? {})) {
    if (!path) continue;
    if (entry.link) specs.push('link:');
    else if (entry.resolved && !/^https?:/.test(entry.resolved)) specs.push(entry.resolved);
    else if (entry.resolved && !entry.integrity) specs.push(entry.resolved);
  }
  return specs;
}

/**
 * The tarballs an app's lockfile pins that the daemon user's npm cache holds (npm keeps them by
 * their integrity), laid out as an npm cache in a directory of their own, for the app's box: an
 * install finds them there when the registry cannot be reached.
 */
async function cachedTarballs(app: AppPackage, hostCache: string | undefined, into: string): Promise<number> {
  if (!hostCache || !app.lock?.packages) return 0;
  let n = 0;
  for (const entry of Object.values(app.lock.packages)) {
    for (const sri of (entry.integrity ?? '').split(/\s+/).filter(Boolean)) {
      const m = /^(sha512|sha384|sha256|sha1)-([A-Za-z0-9+/=]+)$/.exec(sri);
      if (!m) continue;
      const hex = Buffer.from(m[2]!, 'base64').toString('hex');
      const rel = join('_cacache', 'content-v2', m[1]!, hex.slice(0, 2), hex.slice(2, 4), hex.slice(4));
      const from = join(hostCache, rel);
      if (!existsSync(from)) continue;
      await mkdir(dirname(join(into, rel)), { recursive: true });
      await copyFile(from, join(into, rel));
      n++;
      break;
    }
  }
  return n;
}

export interface InstallOptions {
  /** The daemon user's npm settings (npm-settings.ts). */
  npm: NpmSettings;
  /** The Kernel SDK's version the daemon has, which an app's may be replaced with when the registry is out of reach. */
  sdkVersion: string;
}

/**
 * An app's npm dependencies, in two steps in its build box, so that the npm credentials of the
 * daemon's user never reach the app's code:
 *
 * 1. The fetch: `npm ci` (`npm install` without a lockfile) with `--ignore-scripts`, run with the
 *    user's whole npm configuration (credentials included) on its standard input: nothing of the
 *    app runs, its own .npmrc is set aside meanwhile (it could point npm at a proxy of its choice),
 *    and nothing is written where a later program can read it. A dependency npm must build from
 *    a git repository, a path or a URL (npm runs the dependency's own settings and scripts for
 *    that) is fetched without the credentials. Offline, the tarballs the lockfile pins come from
 *    the user's npm cache, and an @onkernel/sdk npm cannot get is left to the daemon's own copy.
 * 2. The build: `npm rebuild` (the dependencies' install scripts and bin links) and the app's own
 *    install lifecycle, as npm ci runs them, with the configuration without its credentials.
 */
export async function installDependencies(source: string, opts: StepOptions & InstallOptions): Promise<void> {
  const app = await appPackage(source);
  const deps = DEP_FIELDS.flatMap((k) => Object.keys((app.pkg?.[k] as object | undefined) ?? {}));
  if (!app.pkg || (!app.lock && deps.length === 0)) {
    opts.log('no dependencies to install');
    return;
  }
  const sh = (script: string, ...args: string[]) => outputOf(opts.box.spawn(['sh', '-c', script, 'build', ...args], { env: opts.env, cwd: BOX_APP }));
  const seed = await mkdtemp(join(tmpdir(), 'rbrowse-npm-seed-'));
  try {
    const cached = await cachedTarballs(app, opts.npm.cache, seed);
    if (cached) {
      await new FileOps(opts.box).unpack(`${BOX_USER.home}/.npm`, await tarOf(seed));
      opts.log(`${cached} of the lockfile's packages are in npm's cache`);
    }
  } finally {
    await rm(seed, { recursive: true, force: true });
  }

  const credentialed = !specsOf(app).some((spec) => NOT_FROM_A_REGISTRY.test(spec));
  if (!credentialed) opts.log('a dependency comes from git, a path or a URL: it is fetched without your npm credentials');
  const fetchEnv: Record<string, string> = {
    ...opts.env,
    npm_config_userconfig: credentialed ? '/dev/stdin' : '/dev/null',
    npm_config_globalconfig: credentialed ? '/dev/null' : BOX_NPMRC,
    npm_config_ignore_scripts: 'true',
    ...(opts.npm.extraCaCerts ? { NODE_EXTRA_CA_CERTS: opts.npm.extraCaCerts } : {}),
  };
  const command = app.lock ? 'ci' : 'install';
  const fetchArgs = [command, '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', '--no-update-notifier'];
  const fetch = async (): Promise<{ code: number | null; errors: ReturnType<typeof npmErrorCatcher> }> => {
    const errors = npmErrorCatcher();
    opts.log(`$ npm ${fetchArgs.join(' ')}`);
    // A box program's standard input is a socket, which /dev/stdin cannot open: cat hands the settings on through a pipe.
    const argv = credentialed ? ['sh', '-c', 'cat | exec npm "$@"', 'fetch', ...fetchArgs] : ['npm', ...fetchArgs];
    const { code } = await step(`npm ${command}`, argv, {
      ...opts,
      env: fetchEnv,
      timeoutMs: INSTALL_TIMEOUT_MS,
      onLine: errors.onLine,
      ...(credentialed ? { stdin: opts.npm.fetch } : {}),
    });
    return { code, errors };
  };
  // The app's own settings are for its build, not for the fetch with the user's credentials.
  const aside = '/tmp/.rbrowse-app-npmrc';
  const setAside = await sh('if [ -e .npmrc ] || [ -L .npmrc ]; then mv -f .npmrc "$1" && echo aside; fi', aside);
  const hadNpmrc = setAside.stdout.toString().trim() === 'aside';
  if (hadNpmrc) opts.log("the app's .npmrc is set aside while its dependencies are fetched with your npm settings");
  let restoreSdk: string | undefined;
  try {
    let { code, errors } = await fetch();
    if (code !== 0 && errors.all().some((l) => UNREACHABLE.test(l))) {
      restoreSdk = await withoutSdk(app, opts, sh);
      if (restoreSdk) ({ code, errors } = await fetch());
    }
    if (code !== 0) throw new BuildError(fetchFailure(command, code, errors.all()));
  } finally {
    if (restoreSdk) await sh(restoreSdk);
    if (hadNpmrc) await sh('mv -f "$1" .npmrc', aside);
  }

  const buildEnv: Record<string, string> = {
    ...opts.env,
    npm_config_globalconfig: BOX_NPMRC,
    npm_config_userconfig: '/dev/null',
    ...(opts.npm.extraCaCerts ? { NODE_EXTRA_CA_CERTS: opts.npm.extraCaCerts } : {}),
  };
  const run = async (what: string, args: string[]) => {
    opts.log(`$ npm ${args.join(' ')}`);
    const errors = npmErrorCatcher();
    const { code } = await step(what, ['npm', ...args], { ...opts, env: buildEnv, timeoutMs: INSTALL_TIMEOUT_MS, onLine: errors.onLine });
    if (code !== 0) throw new BuildError(`${what} failed (exit code ${code})${errors.first() ? `: ${errors.first()}` : ''}`);
  };
  await run('npm rebuild', ['rebuild', '--no-audit', '--no-fund', '--no-update-notifier']);
  const scripts = (app.pkg.scripts as Record<string, string> | undefined) ?? {};
  // The app's own install lifecycle, in the order npm ci runs it.
  for (const event of ['preinstall', 'install', 'postinstall', 'prepublish', 'preprepare', 'prepare', 'postprepare']) {
    if (scripts[event]) await run(`the app's ${event} script`, ['run', event]);
  }
}

/**
 * Fetches a deployment's `source` into /app with git, in the build's box (its network, as the
 * app's user): the ref alone, shallow where the server allows it, else the branches and tags and
 * then the ref; the source's `path` of it is what /app gets. The token of a private repository
 * travels in git's environment (never a command line another user could read) as GitHub takes it,
 * and only for this step: nothing of it is written, and the app's own scripts never see it.
 * Answers the hex sha256 of the fetched tree as a tar (`git archive`).
 */
export async function fetchGitSource(source: { url: string; ref: string; path?: string; token?: string }, opts: StepOptions): Promise<string> {
  const script = `set -e
work=/tmp/.rbrowse-source
rm -rf "$work"; git init -q "$work"; cd "$work"
if git fetch -q --depth 1 -- "$SOURCE_URL" "$SOURCE_REF" 2>/dev/null; then
  git checkout -q --detach FETCH_HEAD
else
  git fetch -q -- "$SOURCE_URL" '+refs/heads/*:refs/remotes/origin/*' '+refs/tags/*:refs/tags/*'
  git checkout -q --detach "$SOURCE_REF" 2>/dev/null || git checkout -q --detach "origin/$SOURCE_REF"
fi
git archive --format=tar HEAD | sha256sum | cut -d' ' -f1 >&3
dir="$work/\${SOURCE_PATH:-.}"
if [ ! -d "$dir" ]; then echo "the repository has no directory $SOURCE_PATH at $SOURCE_REF" >&2; exit 3; fi
cp -a "$dir/." /app/
rm -rf /app/.git "$work"`;
  const auth: Record<string, string> = source.token
    ? // GitHub takes a token as the password of any user; every git server takes it this way.
      {
        GIT_CONFIG_COUNT: '1',
        GIT_CONFIG_KEY_0: 'http.extraHeader',
        GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from(`x-access-token:${source.token}`).toString('base64')}`,
      }
    : {};
  opts.log(`$ git fetch ${source.url} ${source.ref}${source.path ? ` (${source.path})` : ''}`);
  const { code, result } = await step('git fetch', ['sh', '-c', script], {
    ...opts,
    env: {
      ...opts.env,
      ...auth,
      SOURCE_URL: source.url,
      SOURCE_REF: source.ref,
      ...(source.path ? { SOURCE_PATH: source.path } : {}),
      GIT_TERMINAL_PROMPT: '0',
      GIT_CONFIG_NOSYSTEM: '1',
    },
    timeoutMs: FETCH_TIMEOUT_MS,
    resultFd: true,
  });
  if (code === 3) throw new BuildError(`the repository has no directory ${source.path} at ${source.ref}`);
  if (code !== 0)
    throw new BuildError(`fetching ${source.url} at ${source.ref} failed (exit code ${code}); its output is in the deployment's events`);
  const checksum = result.toString().trim();
  if (!/^[0-9a-f]{64}$/.test(checksum)) throw new BuildError('fetching the source gave no tree');
  return checksum;
}

/**
 * When the registry is out of reach and the app pins an @onkernel/sdk that npm cannot get, the
 * daemon's own copy stands in (linkSdk links it) if its version satisfies the app's range:
 * package.json and the lockfile lose the SDK for the fetch. Answers the script that puts them
 * back, or undefined when the SDK is not the app's or the daemon's copy does not fit.
 */
async function withoutSdk(
  app: AppPackage,
  opts: StepOptions & InstallOptions,
  sh: (script: string, ...args: string[]) => ReturnType<typeof outputOf>,
): Promise<string | undefined> {
  const SDK = '@onkernel/sdk';
  const range = DEP_FIELDS.map((k) => (app.pkg?.[k] as Record<string, string> | undefined)?.[SDK]).find(Boolean);
  const pinned = app.lock?.packages?.[`node_modules/${SDK}`]?.version;
  if (!range && !pinned) return undefined;
  const fits =
    (pinned ? semver.satisfies(opts.sdkVersion, `^${pinned}`) : true) &&
    (!range || semver.satisfies(opts.sdkVersion, range) || !semver.validRange(range));
  if (!fits) {
    opts.log(`the registry is out of reach, and the daemon's ${SDK} ${opts.sdkVersion} does not satisfy the app's ${range ?? pinned}`);
    return undefined;
  }
  const files = ['package.json', ...(app.lockName ? [app.lockName] : [])];
  const saved = '/tmp/.rbrowse-app-package';
  const edit = `
const fs = require('node:fs');
const name = ${JSON.stringify(SDK)};
const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8'));
for (const k of ['dependencies', 'devDependencies', 'optionalDependencies']) if (pkg[k]) delete pkg[k][name];
fs.writeFileSync('package.json', JSON.stringify(pkg, null, 2));
const lockName = ${JSON.stringify(app.lockName ?? '')};
if (lockName) {
  const lock = JSON.parse(fs.readFileSync(lockName, 'utf8'));
  delete lock.packages?.['node_modules/' + name];
  const root = lock.packages?.[''];
  for (const k of ['dependencies', 'devDependencies', 'optionalDependencies']) if (root?.[k]) delete root[k][name];
  delete lock.dependencies?.[name];
  fs.writeFileSync(lockName, JSON.stringify(lock, null, 2));
}`;
  const r = await sh(`mkdir -p "$1" && cp -p ${files.map((f) => `'${f}'`).join(' ')} "$1"/ && "$2" -e "$3"`, saved, BOX_NODE, edit);
  if (r.code !== 0) return undefined;
  opts.log(`the registry is out of reach: the app gets the daemon's own ${SDK} ${opts.sdkVersion}`);
  return `cp -p ${files.map((f) => `"${saved}/${f}"`).join(' ')} . && rm -rf "${saved}"`;
}

/** Why a fetch failed, in one line: the package npm could not get and why, where npm said. */
function fetchFailure(command: string, code: number | null, errors: string[]): string {
  const request = errors.map((l) => /request to (\S+) failed, reason: (.*)$/.exec(l)).find(Boolean);
  if (request) {
    const url = request[1]!;
    const pkg = /\/((?:@[^/]+\/)?[^/]+)\/-\/[^/]+-(\d[^/]*)\.tgz$/.exec(url);
    const what = pkg ? `${decodeURIComponent(pkg[1]!)}@${pkg[2]}` : decodeURIComponent(url.replace(/^https?:\/\/[^/]+\//, ''));
    const offline = UNREACHABLE.test(request[2]!) ? " (the registry is out of reach and npm's cache does not have it)" : '';
    return `npm ${command} failed: ${what} could not be fetched from ${new URL(url).host}: ${request[2]}${offline}`;
  }
  return `npm ${command} failed (exit code ${code})${errors[0] ? `: ${errors[0]}` : ''}`;
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
