import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { execa } from 'execa';
import ini from 'ini';

/**
 * The npm configuration of the daemon's user, as an app's install uses it: read from the layers
 * npm itself reads on this host (its global and user files, the `npm_config_*` environment, the
 * proxy variables), with `${VAR}` filled in from the daemon's environment, as npm does.
 *
 * Two views: `fetch` is all of it, credentials included, for the one npm process that downloads
 * an app's dependencies (it gets it on its standard input, never as a file); `build` is the same
 * without any credential, for everything that runs the app's code (lifecycle scripts, the load).
 */
export interface NpmSettings {
  /** npmrc text with every setting, credentials included. */
  fetch: string;
  /** npmrc text without credentials (keys, tokens, passwords, client keys, proxy user info). */
  build: string;
  /** Files the settings name (CA bundles), copied in: [path inside the box, content]. */
  files: [string, string][];
  /** NODE_EXTRA_CA_CERTS as the box sees it, when the daemon's environment has it. */
  extraCaCerts?: string;
  /** The user's npm cache on the host, which an offline install reads tarballs from. */
  cache?: string;
}

/** Where the settings' files go inside a box. */
export const BOX_NPM_DIR = '/etc/npm';
/** The build's npmrc inside the box (npm_config_globalconfig of every build program). */
export const BOX_NPMRC = `${BOX_NPM_DIR}/npmrc`;

/** Keys whose values are credentials, alone or after a registry's `//host/path/:` prefix. */
const SECRET_KEY = /(^|:)(_auth|_authtoken|_password|username|password|certfile|keyfile|cert|key|otp|email)$/i;
/** Settings that name places of the host npm or its process (a parent npm's own, passed on to its children). */
const HOST_ONLY = new Set([
  'prefix',
  'global-prefix',
  'local-prefix',
  'globalconfig',
  'userconfig',
  'cache',
  'logs-dir',
  'init-module',
  'node-gyp',
  'user-agent',
  'npm-version',
  'global',
  'location',
  'script-shell',
  'shell',
  'editor',
  'browser',
  'viewer',
  'tmp',
  'workspace',
  'workspaces',
  'include-workspace-root',
]);

/** npm's `${VAR}` and `${VAR?}` (empty when unset); an unset `${VAR}` stays as written. */
function envReplace(text: string, env: NodeJS.ProcessEnv): string {
  return text.replace(/(\\*)\$\{([^${}?]+)(\?)?\}/g, (whole, escapes: string, name: string, optional?: string) => {
    if (escapes.length % 2) return whole.slice((escapes.length + 1) / 2);
    const value = env[name];
    return `${escapes.slice(escapes.length / 2)}${value ?? (optional ? '' : whole)}`;
  });
}

/** One npmrc file's settings, `${VAR}` filled in (keys too: registry prefixes are often variables). */
function readLayer(file: string | undefined, env: NodeJS.ProcessEnv): Record<string, unknown> {
  if (!file || !existsSync(file)) return {};
  const parsed = ini.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  const expand = (v: unknown): unknown => (typeof v === 'string' ? envReplace(v, env) : Array.isArray(v) ? v.map(expand) : v);
  for (const [k, v] of Object.entries(parsed)) {
    const key = envReplace(k, env);
    // Paths relative to the file they are written in, as npm resolves them.
    out[key] = /(^|:)(cafile|certfile|keyfile)$/.test(key) && typeof v === 'string' && v && !isAbsolute(v) ? resolve(dirname(file), v) : expand(v);
  }
  return out;
}

/** The `npm_config_*` environment as settings (npm's own rule: the rest of the name, `_` as `-` but a leading one, lower-cased). */
function envLayer(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(env)) {
    const m = /^npm_config_(.+)$/i.exec(name);
    if (!m || value === undefined) continue;
    const key = m[1]!.replace(/(?!^)_/g, '-').toLowerCase();
    if (!HOST_ONLY.has(key)) out[key] = value;
  }
  // npm reads the usual proxy variables when its own settings do not name one.
  const proxy = env.HTTPS_PROXY ?? env.https_proxy;
  const httpProxy = env.HTTP_PROXY ?? env.http_proxy;
  const noProxy = env.NO_PROXY ?? env.no_proxy;
  if (proxy && out['https-proxy'] === undefined) out['https-proxy'] = proxy;
  if (httpProxy && out.proxy === undefined) out.proxy = httpProxy;
  if (noProxy && out.noproxy === undefined) out.noproxy = noProxy;
  return out;
}

/** A URL without its user and password (a proxy or registry address a build may use, not log in with). */
function withoutUserInfo(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    const url = new URL(value);
    if (!url.username && !url.password) return value;
    url.username = '';
    url.password = '';
    return url.toString();
  } catch {
    return value;
  }
}

/** Where the host's npm reads its global and user settings and keeps its cache (npm's own answer, with the daemon's environment). */
async function hostLayers(env: NodeJS.ProcessEnv): Promise<{ globalconfig?: string; userconfig?: string; cache?: string }> {
  // The npm of the user's shell: an npm script's or npx's node_modules/.bin (a Node of a project's
  // own, whose prefix names another global file) is not where the user's npm lives.
  const PATH = (env.PATH ?? '')
    .split(':')
    .filter((dir) => !dir.endsWith('/node_modules/.bin'))
    .join(':');
  const r = await execa('npm', ['config', 'get', 'globalconfig', 'userconfig', 'cache'], {
    env: { ...env, PATH },
    extendEnv: false,
    reject: false,
    timeout: 30_000,
    cwd: '/',
  });
  if (r.exitCode !== 0 || typeof r.stdout !== 'string') return {};
  const out: Record<string, string> = {};
  for (const line of r.stdout.split('\n')) {
    const m = /^(globalconfig|userconfig|cache)=(.*)$/.exec(line.trim());
    if (m?.[2] && m[2] !== 'null') out[m[1]!] = m[2];
  }
  return out;
}

/** The daemon user's npm settings (see NpmSettings), read afresh: a user may change them between deploys. */
export async function npmSettings(env: NodeJS.ProcessEnv = process.env): Promise<NpmSettings> {
  const layers = await hostLayers(env);
  const merged: Record<string, unknown> = { ...readLayer(layers.globalconfig, env), ...readLayer(layers.userconfig, env), ...envLayer(env) };
  const files: [string, string][] = [];
  const fetch: Record<string, unknown> = {};
  const build: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(merged)) {
    if (HOST_ONLY.has(key)) continue;
    const name = key.replace(/^.*:/, '');
    if (name === 'cafile' && typeof value === 'string') {
      // A CA bundle is no secret: both views use a copy of it inside the box.
      if (!existsSync(value)) continue;
      const inside = join(BOX_NPM_DIR, `ca-${files.length}.pem`);
      files.push([inside, readFileSync(value, 'utf8')]);
      fetch[key] = inside;
      build[key] = inside;
      continue;
    }
    if ((name === 'certfile' || name === 'keyfile') && typeof value === 'string') {
      // A client certificate and its key go in inline (npm's cert and key), in the fetch's settings only.
      if (existsSync(value))
        fetch[key.replace(/(certfile|keyfile)$/, name === 'certfile' ? 'cert' : 'key')] = readFileSync(value, 'utf8').replace(/\r?\n/g, '\\n');
      continue;
    }
    fetch[key] = value;
    if (SECRET_KEY.test(key)) continue;
    build[key] = /(^|:)(registry|proxy|https-proxy|http-proxy)$/.test(key) ? withoutUserInfo(value) : value;
  }
  const extra = env.NODE_EXTRA_CA_CERTS;
  let extraCaCerts: string | undefined;
  if (extra && existsSync(extra)) {
    extraCaCerts = join(BOX_NPM_DIR, 'node-extra-ca-certs.pem');
    files.push([extraCaCerts, readFileSync(extra, 'utf8')]);
  }
  return {
    fetch: ini.stringify(fetch),
    build: ini.stringify(build),
    files,
    ...(extraCaCerts ? { extraCaCerts } : {}),
    ...(layers.cache ? { cache: layers.cache } : {}),
  };
}
