import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { ROOT, startTestDaemon, type TestDaemon } from './helpers/daemon.js';

/**
 * The endpoints the official @onkernel/sdk calls (read from its resource modules: each
 * `this._client.get|post|...(path)`), against the daemon's /openapi.json. The README states how
 * many are served; this keeps that figure true and lists the rest.
 */
let d: TestDaemon;
before(async () => {
  d = await startTestDaemon();
});
after(async () => {
  await d?.stop();
});

const CALL = /this\._client\.(get|post|put|patch|delete|getAPIList)\((?:\(0, path_\d\.path\)\s*)?([`'"])(\/[^`'"]*)\2/g;
/** `/browsers/${id}/fs/{path}` and `/browsers/{id}/fs/{path}` alike. */
const shape = (method: string, path: string) => `${method.toUpperCase()} ${path.replace(/\$\{[^}]*\}|\{[^}]*\}/g, '{}')}`;

async function sdkEndpoints(): Promise<{ version: string; endpoints: Set<string> }> {
  const pkg = join(dirname(createRequire(join(ROOT, 'package.json')).resolve('@onkernel/sdk')), 'package.json');
  const { version } = JSON.parse(await readFile(pkg, 'utf8')) as { version: string };
  const resources = join(dirname(pkg), 'resources');
  const endpoints = new Set<string>();
  for (const file of await readdir(resources, { recursive: true })) {
    if (!file.endsWith('.js')) continue;
    for (const m of (await readFile(join(resources, file), 'utf8')).matchAll(CALL)) {
      endpoints.add(shape(m[1] === 'getAPIList' ? 'get' : m[1]!, m[3]!));
    }
  }
  return { version, endpoints };
}

/** Kernel's Python SDK (daemon/apps, shipped for Python apps): each `self._get|_post|...("/path"` or `(path_template("/path"`. */
const PY_CALL = /self\._(get|post|put|patch|delete|get_api_list)\(\s*(?:path_template\()?"(\/[^"]*)"/g;
const PYTHON_SDK = join(ROOT, 'daemon', 'apps', 'kernel-python-0.94.0', 'src', 'kernel');

async function pythonSdkEndpoints(): Promise<{ version: string; endpoints: Set<string> }> {
  const version = /__version__ = "([^"]+)"/.exec(await readFile(join(PYTHON_SDK, '_version.py'), 'utf8'))?.[1] ?? '?';
  const endpoints = new Set<string>();
  for (const file of await readdir(join(PYTHON_SDK, 'resources'), { recursive: true })) {
    if (!file.endsWith('.py')) continue;
    for (const m of (await readFile(join(PYTHON_SDK, 'resources', file), 'utf8')).matchAll(PY_CALL)) {
      endpoints.add(shape(m[1] === 'get_api_list' ? 'get' : m[1]!, m[2]!));
    }
  }
  return { version, endpoints };
}

async function servedEndpoints(): Promise<Set<string>> {
  const doc = (await d.api('GET', '/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
  return new Set(Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => shape(m, path))));
}

test("the README's count of each SDK's endpoints served is the true one", async (t) => {
  const served = await servedEndpoints();
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  const node = await sdkEndpoints();
  const python = await pythonSdkEndpoints();
  for (const [sdk, { version, endpoints }, claimOf] of [
    ['@onkernel/sdk', node, (n: number, of: number) => `serves ${n} of the ${of} endpoints`],
    ["Kernel's Python SDK", python, (n: number, of: number) => `${n} of the ${of} of Kernel's Python SDK`],
  ] as const) {
    assert.ok(endpoints.size > 100, `only ${endpoints.size} endpoints found in ${sdk} ${version}: has its layout changed?`);
    const missing = [...endpoints].filter((e) => !served.has(e)).sort();
    const count = endpoints.size - missing.length;
    t.diagnostic(`${sdk} ${version}: ${count} of ${endpoints.size} endpoints served; not served:\n${missing.join('\n')}`);
    const claim = claimOf(count, endpoints.size);
    assert.ok(readme.includes(claim), `README.md should say "${claim}" (${sdk} ${version})`);
  }
});
