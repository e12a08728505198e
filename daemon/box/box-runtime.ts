import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';
import { runnerScript } from '../lib/node-runner.js';
import { BOX_RUNTIME, type BoxRuntime } from './box-spec.js';

/**
 * The packages the programs run inside boxes import by name: the agent and the runners
 * (Playwright, chromium-bidi, ws, chrome-remote-interface, esbuild), an app's TypeScript loader
 * (tsx), the Kernel SDK linked into apps, and Playwright's MCP server for the page tools.
 */
const BOX_PACKAGES = [
  'playwright',
  'chromium-bidi',
  'ws',
  'chrome-remote-interface',
  'esbuild',
  'tsx',
  '@onkernel/sdk',
  '@playwright/mcp',
  '@modelcontextprotocol/sdk',
];

/** Where the packages a project install hoisted beside rbrowse are, inside a box. */
const BOX_HOISTED = '/opt/node_modules';

/** A package's directory as Node's resolution finds it from `from` (node_modules of each parent in turn). */
export function packageDir(name: string, from: string): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    if (basename(dir) !== 'node_modules') {
      const candidate = join(dir, 'node_modules', name);
      if (existsSync(join(candidate, 'package.json'))) return candidate;
    }
    if (dirname(dir) === dir) return undefined;
  }
}

function dependenciesOf(dir: string): string[] {
  try {
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
    return [...new Set(['dependencies', 'optionalDependencies', 'peerDependencies'].flatMap((k) => Object.keys(pkg[k] ?? {})))];
  } catch {
    return [];
  }
}

const under = (path: string, dir: string) => path === dir || path.startsWith(dir + sep);

/**
 * The package directories boxes need, each with where a box sees it. The package's own
 * node_modules (a clone's, a global install's, or what a project install had to nest) is at
 * /opt/rbrowse/node_modules as a whole. A project install hoists the rest into the project's
 * node_modules, next to rbrowse: those of them the box packages need (and nothing else of the
 * project) are at /opt/node_modules, where Node's resolution from /opt/rbrowse looks next,
 * as it looks in the project's node_modules from rbrowse's directory on the host.
 */
export function runtimePackages(pkgRoot: string): [string, string][] {
  const nested = join(pkgRoot, 'node_modules');
  const parent = dirname(pkgRoot);
  const hoisted = basename(parent) === 'node_modules' ? parent : undefined;
  const found = new Set<string>();
  const visit = (name: string, from: string, required: boolean) => {
    const dir = packageDir(name, from);
    if (!dir) {
      if (required) throw new Error(`rbrowse's dependency ${name} is not installed (from ${from}): reinstall rbrowse`);
      return;
    }
    if (found.has(dir)) return;
    found.add(dir);
    for (const dep of dependenciesOf(dir)) visit(dep, dir, false);
  };
  const daemonDir = join(pkgRoot, 'daemon');
  for (const name of BOX_PACKAGES) visit(name, daemonDir, true);
  const out: [string, string][] = existsSync(nested) ? [[nested, `${BOX_RUNTIME}/node_modules`]] : [];
  // Shortest first, so a package nested in a hoisted one comes with its parent's bind.
  for (const dir of [...found].sort((a, b) => a.length - b.length)) {
    if (under(dir, nested) || out.some(([host]) => under(dir, host))) continue;
    if (!hoisted || !under(dir, hoisted))
      throw new Error(
        `rbrowse's dependency at ${dir} lies outside its package and the node_modules it is installed in: reinstall rbrowse with npm's default layout`,
      );
    out.push([dir, `${BOX_HOISTED}/${relative(hoisted, dir).split(sep).join('/')}`]);
  }
  return out;
}

let runtime: BoxRuntime | undefined;

/** rbrowse's files boxes need, found from where this module runs (sources or bundle). */
export function boxRuntime(): BoxRuntime {
  if (runtime) return runtime;
  const daemonDir = dirname(dirname(runnerScript('box', 'agent.mjs')));
  const pkgRoot = dirname(daemonDir);
  // Kernel's Python SDK ships in the package (Apache-2.0), as the one its tests drive.
  const pythonSdk = join(daemonDir, 'apps', 'kernel-python-0.94.0');
  runtime = {
    node: process.execPath,
    daemonDir,
    packages: runtimePackages(pkgRoot),
    ...(existsSync(join(pythonSdk, 'src', 'kernel')) ? { pythonSdk } : {}),
  };
  return runtime;
}

/** Where a box sees a file of rbrowse's runtime (a runner, a package's module), by its host path. */
export function inBox(hostPath: string): string {
  const rt = boxRuntime();
  for (const [host, inside] of [[rt.daemonDir, `${BOX_RUNTIME}/daemon`] as [string, string], ...rt.packages]) {
    if (under(hostPath, host)) return inside + hostPath.slice(host.length).split(sep).join('/');
  }
  throw new Error(`${hostPath} is not part of rbrowse's runtime in boxes`);
}

/** A box package's directory inside boxes (the Kernel SDK an app without its own is given). */
export function packageInBox(name: string): string {
  const dir = packageDir(name, boxRuntime().daemonDir);
  if (!dir) throw new Error(`rbrowse's dependency ${name} is not installed`);
  return inBox(dir);
}

/** The version of a box package the daemon has. */
export function packageVersion(name: string): string {
  const dir = packageDir(name, boxRuntime().daemonDir);
  if (!dir) throw new Error(`rbrowse's dependency ${name} is not installed`);
  return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;
}
