import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { killGroup } from '../daemon/lib/procs.js';
import { sleep, startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';

/** The System V shared memory segments of the caller's IPC namespace (the host's, for this test). */
async function hostSegments(): Promise<Set<string>> {
  const [header, ...rows] = (await readFile('/proc/sysvipc/shm', 'utf8')).trim().split('\n');
  const id = header!.trim().split(/\s+/).indexOf('shmid');
  return new Set(rows.map((r) => r.trim().split(/\s+/)[id]!));
}

let d: TestDaemon;
before(async () => {
  d = await startTestDaemon();
});
after(async () => {
  await d?.stop();
});

const sh = async (id: string, script: string) => {
  const r = await d.api('POST', `/browsers/${id}/process/exec`, { command: 'sh', args: ['-c', script] });
  assert.equal(r.status, 200, r.text);
  return { code: r.body.exit_code as number, out: Buffer.from(r.body.stdout_b64, 'base64').toString() };
};

test("a session's shared memory is its own: no other session and no local user sees or attaches it", { timeout: 120_000 }, async () => {
  // The control: an Xvfb and x11vnc of the host's own share memory the host can see.
  const before = await hostSegments();
  // Xvfb picks a free display and says which once it accepts clients (an x11vnc started before
  // that gives up at once: under load in CI run 37 it did, and no memory was ever shared).
  const xvfb = spawn('Xvfb', ['-displayfd', '3', '-screen', '0', '640x480x24', '-nolisten', 'tcp'], {
    stdio: ['ignore', 'ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let vnc: ReturnType<typeof spawn> | undefined;
  try {
    const display = await new Promise<string>((resolve, reject) => {
      let out = '';
      xvfb.stdio[3]!.on('data', (chunk: Buffer) => {
        out += chunk;
        if (out.includes('\n')) resolve(out.trim());
      });
      xvfb.once('exit', (code) => reject(new Error(`Xvfb exited (${code}) before it named its display`)));
    });
    vnc = spawn('x11vnc', ['-display', `:${display}`, '-rfbport', '0', '-nopw', '-forever', '-quiet'], { stdio: 'ignore', detached: true });
    await waitFor(async () => [...(await hostSegments())].some((s) => !before.has(s)), 20_000, "the host's own x11vnc to share memory");
  } finally {
    if (vnc) killGroup(vnc.pid!, 'SIGKILL');
    killGroup(xvfb.pid!, 'SIGKILL');
  }
  await sleep(500);
  const baseline = await hostSegments();

  const a = (await d.api('POST', '/browsers', { viewport: { width: 1024, height: 768 } })).body;
  const b = (await d.api('POST', '/browsers', { viewport: { width: 1024, height: 768 } })).body;
  try {
    // Inside A: its x11vnc and Xvfb share memory (MIT-SHM), and a POSIX segment of its own.
    const inA = await waitFor(
      async () => {
        const r = await sh(a.session_id, 'ipcs -m | grep -c "^0x" ; printf secret > /dev/shm/a-secret');
        return Number(r.out.trim()) > 0 ? r : undefined;
      },
      20_000,
      "A's shared memory",
    );
    assert.ok(inA);

    // Seen from the host (any local user): none of it.
    const host = await hostSegments();
    assert.deepEqual(
      [...host].filter((s) => !baseline.has(s)),
      [],
      "none of A's segments is in the host's IPC namespace",
    );
    // Seen from B: not A's /dev/shm, and (its own IPC namespace) segments of its own only.
    const fromB = await sh(b.session_id, 'ls -a /dev/shm; ipcs -m -c');
    assert.doesNotMatch(fromB.out, /a-secret/);
    assert.equal((await sh(a.session_id, 'cat /dev/shm/a-secret')).out, 'secret', 'while A has it');
  } finally {
    await d.api('DELETE', `/browsers/${a.session_id}`);
    await d.api('DELETE', `/browsers/${b.session_id}`);
  }
  assert.deepEqual(
    [...(await hostSegments())].filter((s) => !baseline.has(s)),
    [],
    'nothing of theirs is left in the host either',
  );
});
