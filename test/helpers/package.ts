import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { ROOT } from './daemon.js';

/** The machine's npm, on the machine's Node: what a user's project installs with. */
export const NPM = 'npm';

/**
 * `npm pack` as on a fresh clone: the files git tracks (and new ones it does not ignore) copied
 * into a directory of their own, so that the package's prepack builds there from nothing and no
 * file of this checkout's dist/ can slip in; node_modules is linked, as `npm ci` would have made
 * it. Answers the tarball's path, in `dir`.
 */
export async function packFreshClone(dir: string): Promise<string> {
  const clone = join(dir, 'clone');
  const files = (await execa('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT })).stdout
    .split('\0')
    .filter(Boolean);
  for (const file of files) {
    await mkdir(join(clone, dirname(file)), { recursive: true });
    // A file git still lists but the work tree no longer has (deleted, not yet committed) is not part of the clone.
    await cp(join(ROOT, file), join(clone, file)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }
  await symlink(join(ROOT, 'node_modules'), join(clone, 'node_modules'));
  await execa(NPM, ['pack', '--pack-destination', dir], { cwd: clone, env: { ...process.env, NO_COLOR: '1' } });
  const { name, version } = JSON.parse(await readFile(join(clone, 'package.json'), 'utf8')) as { name: string; version: string };
  await rm(clone, { recursive: true, force: true });
  return join(dir, `${name}-${version}.tgz`);
}

/** A fresh project (`npm init -y`, as a user starts one), with `pkg` fields merged into its package.json. */
export async function freshProject(pkg: Record<string, unknown> = {}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'rbrowse-user-project-'));
  await execa(NPM, ['init', '-y'], { cwd: dir });
  if (Object.keys(pkg).length) {
    const file = join(dir, 'package.json');
    await writeFile(file, `${JSON.stringify({ ...JSON.parse(await readFile(file, 'utf8')), ...pkg }, null, 2)}\n`);
  }
  return dir;
}

/** npm install in `cwd`, from npm's cache where it can (these machines reach the registry through a proxy). */
export async function npmInstall(cwd: string, args: string[], env: Record<string, string | undefined> = process.env): Promise<void> {
  const r = await execa(NPM, ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', ...args], {
    cwd,
    env,
    extendEnv: false,
    reject: false,
    timeout: 600_000,
  });
  if (r.exitCode !== 0) throw new Error(`npm install ${args.join(' ')} failed (${r.exitCode}):\n${r.stderr}`);
}
