import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { killDaemonHard, sessionProcessesNamed, startTestDaemon, tornDown, waitFor, type TestDaemon } from './helpers/daemon.js';

/** The System V shared memory segments each of `pids` created (x11vnc's MIT-SHM with Xvfb). */
async function segmentsOf(pids: number[]): Promise<number> {
  const [header, ...rows] = (await readFile('/proc/sysvipc/shm', 'utf8')).trim().split('\n');
  const cpid = header!.trim().split(/\s+/).indexOf('cpid');
  return rows.filter((r) => pids.includes(Number(r.trim().split(/\s+/)[cpid]))).length;
}

let d: TestDaemon;
before(async () => {
  d = await startTestDaemon();
});
after(async () => {
  await d?.stop();
});

const x11vnc = (id: string) => sessionProcessesNamed(d.home, id, 'x11vnc');

test("a killed x11vnc's shared memory does not outlive its session, nor a crashed daemon's leftovers", { timeout: 120_000 }, async () => {
  // An x11vnc killed -9 is restarted; both its segments and its successor's go with the session.
  const first = (await d.api('POST', '/browsers', { viewport: { width: 1024, height: 768 } })).body;
  const [killed] = (await waitFor(async () => ((await x11vnc(first.session_id)).length ? x11vnc(first.session_id) : undefined), 20_000, 'x11vnc'))!;
  assert.ok((await segmentsOf([killed!])) > 0, 'x11vnc shares memory with Xvfb (else this test proves nothing)');
  process.kill(killed!, 'SIGKILL');
  const [successor] = (await waitFor(async () => {
    const now = await x11vnc(first.session_id);
    return now.length && !now.includes(killed!) ? now : undefined;
  }, 20_000, 'x11vnc restarted'))!;
  assert.equal((await d.api('DELETE', `/browsers/${first.session_id}`)).status, 204);
  await tornDown(d, first.session_id);
  assert.equal(await segmentsOf([killed!, successor!]), 0);

  // A crashed daemon's headful session: the restart reaps its processes and their segments.
  const second = (await d.api('POST', '/browsers', { viewport: { width: 1024, height: 768 } })).body;
  const left = (await waitFor(async () => ((await x11vnc(second.session_id)).length ? x11vnc(second.session_id) : undefined), 20_000, 'x11vnc'))!;
  assert.ok((await segmentsOf(left)) > 0);
  await killDaemonHard(d);
  const restarted = await d.cli(['daemon', 'start']);
  assert.equal(restarted.exitCode, 0, restarted.stderr);
  d.baseUrl = restarted.stdout.trim();
  assert.equal(await segmentsOf(left), 0);
});
