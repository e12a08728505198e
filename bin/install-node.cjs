#!/usr/bin/env node
/*
 * rbrowse runs on Node 24 whatever Node its user's project runs on. In a clone that Node is the
 * `node` devDependency (node_modules/.bin/node). An installed package gets it here instead, as
 * the architecture's own build of Node (`node-linux-<arch>`, what the `node` package installs)
 * in <package>/runtime: a dependency on `node` would be hoisted into the user's project and its
 * `node` linked into the project's node_modules/.bin, moving every npm script and npx tool of the
 * project onto Node 24.
 *
 * Run by npm after the package installs (postinstall), and by bin/rbrowse when the runtime is
 * missing (an install with --ignore-scripts). The install is npm's own, with the npm settings
 * the user has (the registry, its CA file, a proxy, the cache), so it works wherever the
 * user's npm does, and offline from npm's cache.
 */
'use strict';
const { spawnSync } = require('node:child_process');
const { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const runtime = join(root, 'runtime');
const link = join(runtime, 'node');
const quiet = process.argv.includes('--postinstall');

function fail(message) {
  process.stderr.write(`rbrowse: ${message}\n`);
  // A failed postinstall would fail the user's whole npm install; bin/rbrowse tries again and says why.
  process.exit(quiet ? 0 : 1);
}

// A clone brings its Node as a devDependency; nothing to install.
if (existsSync(join(root, 'node_modules', '.bin', 'node')) || existsSync(link)) process.exit(0);
const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).rbrowse.node;
if (process.platform !== 'linux' || !['x64', 'arm64'].includes(process.arch))
  fail(`Node ${version} for ${process.platform}-${process.arch} is not available: rbrowse runs on Linux (x64, arm64)`);
const name = `node-linux-${process.arch}`;

// A fresh directory beside the final one, renamed into place: an interrupted install leaves no half runtime.
const staging = `${runtime}.partial-${process.pid}`;
rmSync(staging, { recursive: true, force: true });
mkdirSync(staging, { recursive: true });
writeFileSync(join(staging, 'package.json'), `${JSON.stringify({ private: true, dependencies: { [name]: version } }, null, 2)}\n`);

// The npm that installs rbrowse (npm_execpath) when run by one, else the npm on PATH.
const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ['npm'];
const env = { ...process.env };
// The settings of the install that runs this one are inherited, but it is not global, saves
// nothing and belongs to no workspace of the user's project.
for (const key of Object.keys(env)) {
  if (/^npm_config_(global|location|prefix|save|save_.*|workspaces?|include_workspace_root|dry_run|package_lock|package_lock_only)$/i.test(key))
    delete env[key];
}
if (!quiet) process.stderr.write(`rbrowse: installing its Node ${version} (${name}) with npm...\n`);
const r = spawnSync(
  npm[0],
  [
    ...npm.slice(1),
    'install',
    '--prefix',
    staging,
    '--no-package-lock',
    '--no-audit',
    '--no-fund',
    '--no-update-notifier',
    '--loglevel=error',
    '--prefer-offline',
  ],
  { stdio: ['ignore', 'inherit', 'inherit'], env },
);
if (r.error || r.status !== 0) {
  rmSync(staging, { recursive: true, force: true });
  fail(
    `could not install Node ${version} (${name}) with npm${r.error ? `: ${r.error.message}` : ` (exit code ${r.status})`}; run \`rbrowse --version\` again once npm can reach its registry`,
  );
}
symlinkSync(join('node_modules', name, 'bin', 'node'), join(staging, 'node'));
rmSync(runtime, { recursive: true, force: true });
renameSync(staging, runtime);
