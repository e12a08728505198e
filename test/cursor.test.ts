import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type Kernel from '@onkernel/sdk';
import { sessionProcessesNamed, startSdkDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';

let d: TestDaemon;
let kernel: Kernel;
before(async () => ({ d, kernel } = await startSdkDaemon()));
after(async () => d?.stop());

/** The session's cursor hiders: unclutter processes carrying the session's marker. */
const hiders = (id: string) => sessionProcessesNamed(d.home, id, 'unclutter');

test('cursor: hidden runs an XFixes hider on the session display, shown again stops it; batch set_cursor too; headless is a no-op', async () => {
  const { session_id: id } = await kernel.browsers.create({ headless: false });
  assert.deepEqual(await kernel.browsers.computer.setCursorVisibility(id, { hidden: true }), { ok: true });
  await waitFor(async () => (await hiders(id)).length === 1, 10_000, 'the hider to run');
  // Hiding twice keeps one hider.
  await kernel.browsers.computer.setCursorVisibility(id, { hidden: true });
  assert.equal((await hiders(id)).length, 1);
  await kernel.browsers.computer.batch(id, {
    actions: [
      { type: 'set_cursor', set_cursor: { hidden: false } },
      { type: 'move_mouse', move_mouse: { x: 5, y: 5 } },
    ],
  });
  await waitFor(async () => (await hiders(id)).length === 0, 10_000, 'the hider to stop');
  const cli = await d.cli(['computer', 'cursor', id, '--hidden']);
  assert.equal(cli.exitCode, 0, cli.stderr);
  await waitFor(async () => (await hiders(id)).length === 1, 10_000, 'the hider to run again');
  await kernel.browsers.deleteByID(id);
  await waitFor(async () => (await hiders(id)).length === 0, 20_000, 'the hider to end with the session');

  const headless = await kernel.browsers.create({ headless: true });
  assert.deepEqual(await kernel.browsers.computer.setCursorVisibility(headless.session_id, { hidden: true }), { ok: true });
  assert.equal((await d.api('POST', `/browsers/${headless.session_id}/computer/cursor`, { hidden: 'yes' })).status, 400);
  await kernel.browsers.deleteByID(headless.session_id);
});
