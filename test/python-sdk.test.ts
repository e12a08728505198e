import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { execa } from 'execa';
import { ROOT } from './helpers/daemon.js';
import { sdkDaemonWithFixtures } from './helpers/fixtures.js';
import { startLoginSite } from './helpers/login-site.js';

// Kernel's official Python SDK 0.94.0, unchanged (daemon/apps), drives the daemon from its own
// test suite (test/python): the calls a Python user makes, with the Python SDK's own encodings.
// Debian's python3 with the packages `npm run setup` installs (python3-httpx, python3-pydantic...).
const PYTHON = '/usr/bin/python3';
const SDK = join(ROOT, 'daemon', 'apps', 'kernel-python-0.94.0');

const env = sdkDaemonWithFixtures();

test("Kernel's Python SDK 0.94.0 runs its suite against the daemon unchanged", { timeout: 600_000 }, async (t) => {
  assert.ok(existsSync(PYTHON), `${PYTHON}: run npm run setup`);
  const site = await startLoginSite({ bob: { password: 'builder' } });
  t.after(() => site.close());
  const r = await execa(PYTHON, ['-m', 'unittest', '-v', 'test_kernel_sdk'], {
    cwd: join(ROOT, 'test', 'python'),
    reject: false,
    env: {
      PYTHONPATH: `${join(SDK, 'shim')}:${join(SDK, 'src')}`,
      PYTHONDONTWRITEBYTECODE: '1',
      KERNEL_BASE_URL: env.d.baseUrl,
      KERNEL_API_KEY: env.d.apiKey,
      RBROWSE_FIXTURES_URL: env.fixtures.url,
      RBROWSE_LOGIN_SITE_URL: site.url,
    },
    extendEnv: false,
    timeout: 540_000,
  });
  assert.equal(r.exitCode, 0, `${r.stderr}\n${r.stdout}`);
  assert.match(r.stderr, /^OK$/m, r.stderr);
  const ran = Number(/^Ran (\d+) tests?/m.exec(r.stderr)?.[1]);
  assert.ok(ran >= 10, `ran ${ran} tests:\n${r.stderr}`);
  console.log(
    r.stderr
      .split('\n')
      .filter((l) => l.endsWith('... ok'))
      .join('\n'),
  );
});
