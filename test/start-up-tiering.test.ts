import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { STARTUP, V8_DEFAULTS } from '../daemon/lib/start-up-tiering.js';
import { ROOT } from './helpers/daemon.js';

test("the tiering thresholds put back after start-up are this Node's own V8 defaults, and start-up's are above them", () => {
  // The node the daemon runs on (bin/rbrowse), whatever node runs the tests.
  const options = execFileSync(join(ROOT, 'node_modules', '.bin', 'node'), ['--v8-options'], { encoding: 'utf8' });
  for (const [name, value] of Object.entries(V8_DEFAULTS)) {
    const m = new RegExp(`default: --${name}=(\\d+)\\b`).exec(options);
    assert.ok(m, `node --v8-options lists no default for --${name}`);
    assert.equal(value, Number(m[1]), `--${name}`);
    assert.ok(STARTUP[name as keyof typeof STARTUP] > value, `--${name} is raised during start-up`);
  }
  assert.deepEqual(Object.keys(STARTUP).sort(), Object.keys(V8_DEFAULTS).sort());
});
