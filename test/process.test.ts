import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type Kernel from '@onkernel/sdk';
import { findMarkedProcesses } from '../daemon/lib/procs.js';
import { processesGone, sessionProcessesNamed, sleep, startSdkDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';

let d: TestDaemon;
let kernel: Kernel;
before(async () => ({ d, kernel } = await startSdkDaemon()));
after(async () => d?.stop());

const b64 = (s: string) => Buffer.from(s).toString('base64');
const text = (b64s: string | undefined) => Buffer.from(b64s ?? '', 'base64').toString();

async function withSession<T>(run: (id: string) => Promise<T>, body: object = { headless: true }): Promise<T> {
  const session = await kernel.browsers.create(body);
  try {
    return await run(session.session_id);
  } finally {
    await kernel.browsers.deleteByID(session.session_id).catch(() => {});
  }
}

/** The whole output stream of a spawned process: the concatenated stdout and stderr, and the exit code. */
async function drain(id: string, processId: string): Promise<{ stdout: string; stderr: string; exit?: number; events: string[] }> {
  const out = { stdout: '', stderr: '', exit: undefined as number | undefined, events: [] as string[] };
  const stream = await kernel.browsers.process.stdoutStream(processId, { id });
  for await (const ev of stream as AsyncIterable<any>) {
    out.events.push(ev.event);
    if (ev.event === 'output') out[ev.stream as 'stdout' | 'stderr'] += text(ev.data_b64);
    if (ev.event === 'exit') out.exit = ev.exit_code;
  }
  return out;
}

describe('processes in a session', () => {
  test('exec: exit code, output, cwd, env and duration; it runs in the session, not on the host', async () => {
    await withSession(async (id) => {
      const r = await kernel.browsers.process.exec(id, {
        command: 'sh',
        args: ['-c', 'echo "out $GREETING"; echo err >&2; pwd; ls /home/kernel/.. ; test -e /etc/passwd && echo has-etc; exit 3'],
        cwd: '/tmp',
        env: { GREETING: 'hello' },
      });
      assert.equal(r.exit_code, 3);
      const lines = text(r.stdout_b64).split('\n');
      assert.equal(lines[0], 'out hello');
      assert.equal(lines[1], '/tmp');
      assert.deepEqual(lines.slice(2, 3), ['kernel'], 'only the session home is under /home');
      assert.equal(text(r.stderr_b64), 'err\n');
      assert.ok(typeof r.duration_ms === 'number' && r.duration_ms >= 0);

      // A file the process writes is a file of the session: the fs API reads it back.
      await kernel.browsers.process.exec(id, { command: 'sh', args: ['-c', 'echo made-by-exec > /home/kernel/made.txt'] });
      const file = await kernel.browsers.fs.readFile(id, { path: '/home/kernel/made.txt' });
      assert.equal(await file.text(), 'made-by-exec\n');
      // And one the fs API writes is seen by the next process.
      await kernel.browsers.fs.writeFile(id, Buffer.from('from-fs'), { path: '/tmp/from-fs.txt' });
      const cat = await kernel.browsers.process.exec(id, { command: 'cat', args: ['/tmp/from-fs.txt'] });
      assert.equal(text(cat.stdout_b64), 'from-fs');
    });
  });

  test("exec: another session's files are out of sight, and the user is the session's", async () => {
    await withSession(async (a) =>
      withSession(async (b) => {
        await kernel.browsers.process.exec(a, { command: 'sh', args: ['-c', 'echo secret > /home/kernel/secret.txt'] });
        const r = await kernel.browsers.process.exec(b, { command: 'cat', args: ['/home/kernel/secret.txt'] });
        assert.notEqual(r.exit_code, 0);
        assert.match(text(r.stderr_b64), /No such file/);
        const who = await kernel.browsers.process.exec(b, { command: 'id', args: ['-u'] });
        if (process.getuid?.() === 0) assert.notEqual(text(who.stdout_b64).trim(), '0', 'never root');
      }),
    );
  });

  test('exec and spawn of a program that does not exist: 400 naming it, and nothing of rbrowse', async () => {
    await withSession(async (id) => {
      for (const run of [
        () => kernel.browsers.process.exec(id, { command: 'no-such-program', args: ['x'] }),
        () => kernel.browsers.process.spawn(id, { command: 'no-such-program', args: ['x'] }),
      ]) {
        await assert.rejects(run(), (err: { status?: number; message: string }) => {
          assert.equal(err.status, 400, err.message);
          assert.match(err.message, /command: no-such-program: no such program in the session/);
          assert.doesNotMatch(err.message, /setpriv|bwrap|agent|rbrowse/);
          return true;
        });
      }
      // A program that exists but fails is its own exit code, as before.
      const sh = await kernel.browsers.process.exec(id, { command: 'sh', args: ['-c', 'no-such-program'] });
      assert.equal(sh.exit_code, 127);
      // Control: a program that exists runs, and timeout_sec 0 is no limit.
      assert.equal((await kernel.browsers.process.exec(id, { command: 'true', timeout_sec: 0 })).exit_code, 0);
      assert.ok((await kernel.browsers.process.spawn(id, { command: 'true', timeout_sec: 0 })).process_id);
    });
  });

  test('exec: timeout_sec kills a process that outlives it (exit 124, output so far kept)', async () => {
    await withSession(async (id) => {
      const started = Date.now();
      const r = await kernel.browsers.process.exec(id, { command: 'sh', args: ['-c', 'echo before; sleep 60; echo after'], timeout_sec: 1 });
      assert.equal(r.exit_code, 124);
      assert.equal(text(r.stdout_b64), 'before\n');
      // TERM first, to the program itself: its trap runs before the end.
      const trapped = await kernel.browsers.process.exec(id, {
        command: 'sh',
        args: ['-c', 'trap "echo cleaned up; exit 1" TERM; while :; do sleep 0.1; done'],
        timeout_sec: 1,
      });
      assert.deepEqual([trapped.exit_code, text(trapped.stdout_b64)], [124, 'cleaned up\n']);
      assert.ok(Date.now() - started < 20_000, 'it did not wait for the sleep');
    });
  });

  test('exec: a client that hangs up takes its command along; one kept-alive connection serves many', async () => {
    await withSession(async (id) => {
      const aborted = new AbortController();
      const call = fetch(`${d.baseUrl}/browsers/${id}/process/exec`, {
        method: 'POST',
        headers: { authorization: `Bearer ${d.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ command: 'sh', args: ['-c', 'echo started > /tmp/hangup; exec sleep 300'] }),
        signal: aborted.signal,
      }).catch(() => null);
      await waitFor(
        async () => (await kernel.browsers.fs.fileInfo(id, { path: '/tmp/hangup' }).catch(() => null)) !== null,
        10_000,
        'the command to start',
      );
      const sleeping = async () => (await sessionProcessesNamed(d.home, id, 'sleep')).length;
      assert.equal(await sleeping(), 1);
      aborted.abort();
      await call;
      await waitFor(async () => (await sleeping()) === 0, 10_000, 'the command to be killed');
      // Many execs over one kept-alive connection (the SDK's): nothing piles up per request.
      for (let i = 0; i < 15; i++) assert.equal((await kernel.browsers.process.exec(id, { command: 'true' })).exit_code, 0);
    });
  });

  test('exec: as_root and a foreign as_user are refused with 403; bad bodies are 400s', async () => {
    await withSession(async (id) => {
      await assert.rejects(kernel.browsers.process.exec(id, { command: 'id', as_root: true }), (e: any) => e.status === 403);
      await assert.rejects(kernel.browsers.process.exec(id, { command: 'id', as_user: 'root' }), (e: any) => e.status === 403);
      const ok = await kernel.browsers.process.exec(id, { command: 'true', as_user: 'kernel' });
      assert.equal(ok.exit_code, 0);
      for (const body of [
        {},
        { command: '' },
        { command: 'ls', cwd: 'relative' },
        { command: 'ls', cwd: '/a/../b' },
        { command: 'ls', timeout_sec: -1 },
        { command: 'ls', env: { 'A=B': 'x' } },
      ]) {
        const res = await d.api('POST', `/browsers/${id}/process/exec`, body);
        assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
        assert.equal(res.body.code, 'bad_request');
      }
      await assert.rejects(kernel.browsers.process.exec(id, { command: 'no-such-program-here' }), (e: any) => e.status === 400);
    });
  });

  test('spawn: output streamed (earlier output replayed), stdin, status, and the exit event ends the stream', async () => {
    await withSession(async (id) => {
      const p = await kernel.browsers.process.spawn(id, {
        command: 'sh',
        args: ['-c', 'echo ready; read line; echo "got $line"; echo oops >&2; exit 5'],
      });
      assert.match(p.process_id!, /^[0-9a-f-]{36}$/);
      assert.ok(p.pid! > 0);
      await waitFor(async () => (await kernel.browsers.process.status(p.process_id!, { id })).state === 'running', 5000, 'running');
      const drained = drain(id, p.process_id!);
      const w = await kernel.browsers.process.stdin(p.process_id!, { id, data_b64: b64('hello\n') });
      assert.equal(w.written_bytes, 6);
      const out = await drained;
      assert.equal(out.stdout, 'ready\ngot hello\n');
      assert.equal(out.stderr, 'oops\n');
      assert.equal(out.exit, 5);
      assert.equal(out.events.at(-1), 'exit');
      const status = await kernel.browsers.process.status(p.process_id!, { id });
      assert.equal(status.state, 'exited');
      assert.equal(status.exit_code, 5);
      // A stream opened after the exit replays everything and ends at once.
      assert.deepEqual(await drain(id, p.process_id!).then((o) => [o.stdout, o.exit]), ['ready\ngot hello\n', 5]);
      await assert.rejects(kernel.browsers.process.stdin(p.process_id!, { id, data_b64: b64('late') }), (e: any) => e.status === 409);
    });
  });

  test('kill: TERM reaches the program (its trap runs), KILL ends it; status shows memory while it runs', async () => {
    await withSession(async (id) => {
      const p = await kernel.browsers.process.spawn(id, {
        command: 'sh',
        args: ['-c', 'trap "echo trapped; exit 7" TERM; echo up; while :; do sleep 0.1; done'],
      });
      const drained = drain(id, p.process_id!);
      await waitFor(async () => (await kernel.browsers.process.status(p.process_id!, { id })).mem_bytes! > 0, 5000, 'memory figures');
      await sleep(300);
      assert.deepEqual(await kernel.browsers.process.kill(p.process_id!, { id, signal: 'TERM' }), { ok: true });
      const out = await drained;
      assert.equal(out.stdout, 'up\ntrapped\n');
      assert.equal(out.exit, 7);

      const q = await kernel.browsers.process.spawn(id, { command: 'sh', args: ['-c', 'trap "" TERM; sleep 60'] });
      await kernel.browsers.process.kill(q.process_id!, { id, signal: 'KILL' });
      assert.equal((await drain(id, q.process_id!)).exit, 137);
      // Killing one that exited is no error.
      assert.deepEqual(await kernel.browsers.process.kill(q.process_id!, { id, signal: 'TERM' }), { ok: true });
      await assert.rejects(kernel.browsers.process.status('00000000-0000-4000-8000-000000000000', { id }), (e: any) => e.status === 404);
    });
  });

  test('a pseudo-terminal: the program sees a tty of the size asked, resize changes it; resize without one is a 400', async () => {
    await withSession(async (id) => {
      const p = await kernel.browsers.process.spawn(id, {
        command: 'sh',
        args: ['-c', 'test -t 0 && echo is-tty; stty size; read x; stty size'],
        allocate_tty: true,
        rows: 30,
        cols: 100,
      });
      const drained = drain(id, p.process_id!);
      await waitFor(async () => (await d.api('GET', `/browsers/${id}/process/${p.process_id}/status`)).body.state === 'running', 5000, 'running');
      await sleep(500);
      assert.deepEqual(await kernel.browsers.process.resize(p.process_id!, { id, rows: 40, cols: 120 }), { ok: true });
      await kernel.browsers.process.stdin(p.process_id!, { id, data_b64: b64('go\n') });
      const out = await drained;
      const lines = out.stdout.replaceAll('\r', '').split('\n').filter(Boolean);
      assert.deepEqual(
        lines.filter((l) => l !== 'go'),
        ['is-tty', '30 100', '40 120'],
      );
      assert.equal(out.exit, 0);

      const plain = await kernel.browsers.process.spawn(id, { command: 'sleep', args: ['5'] });
      await assert.rejects(kernel.browsers.process.resize(plain.process_id!, { id, rows: 10, cols: 10 }), (e: any) => e.status === 400);
    });
  });

  test('processes keep the session active, end with it, and are invisible to another organization', async () => {
    const session = await kernel.browsers.create({ headless: true, timeout_seconds: 10 });
    const id = session.session_id;
    const p = await kernel.browsers.process.spawn(id, { command: 'sleep', args: ['600'] });
    // Past its inactivity timeout, the running process keeps it alive.
    await sleep(13_000);
    assert.equal((await kernel.browsers.process.status(p.process_id!, { id })).state, 'running');
    const key = (await d.cli(['auth', 'create-key', '--org', 'process-other'])).stdout.trim();
    for (const [method, path, body] of [
      ['GET', `/browsers/${id}/process/${p.process_id}/status`],
      ['POST', `/browsers/${id}/process/${p.process_id}/kill`, { signal: 'KILL' }],
      ['POST', `/browsers/${id}/process/exec`, { command: 'true' }],
    ] as const) {
      assert.equal((await d.api(method, path, body, key)).status, 404, `${method} ${path}`);
    }
    assert.equal((await kernel.browsers.process.status(p.process_id!, { id })).state, 'running', 'untouched by the other org');
    await kernel.browsers.deleteByID(id);
    await processesGone(d.home, id);
    assert.deepEqual(await findMarkedProcesses(d.home, id), []);
    // An ended session takes nothing more: each browser-level route of it is a 404.
    for (const [method, path, body] of [
      ['POST', `/browsers/${id}/process/exec`, { command: 'true' }],
      ['POST', `/browsers/${id}/process/spawn`, { command: 'true' }],
      ['GET', `/browsers/${id}/process/${p.process_id}/status`],
      ['POST', `/browsers/${id}/playwright/execute`, { code: 'return 1' }],
      ['POST', `/browsers/${id}/curl`, { url: 'http://127.0.0.1:9/' }],
      ['GET', `/browsers/${id}/logs/stream?source=supervisor&supervisor_process=chromium`],
      ['POST', `/browsers/${id}/fs/watch`, { path: '/tmp' }],
      ['POST', `/browsers/${id}/computer/clipboard/read`],
      ['POST', `/browsers/${id}/computer/cursor`, { hidden: true }],
      ['POST', `/browsers/${id}/replays`, {}],
    ] as const) {
      assert.equal((await d.api(method, path, body)).status, 404, `${method} ${path} of an ended session`);
    }
  });

  test('CLI: exec passes output and exit code through; process spawn, stdin, output, status, kill', async () => {
    await withSession(async (id) => {
      const r = await d.cli(['exec', id, '--env', 'X=1', '--cwd', '/tmp', '--', 'sh', '-c', 'echo "hi $X $(pwd)"; echo e >&2; exit 4']);
      assert.equal(r.exitCode, 4, r.stderr);
      assert.equal(r.stdout, 'hi 1 /tmp');
      assert.equal(r.stderr, 'e');
      const spawned = await d.cli(['process', 'spawn', id, '--', 'sh', '-c', 'read a; echo "echo $a"; exit 3']);
      assert.equal(spawned.exitCode, 0, spawned.stderr);
      const pid = spawned.stdout.trim();
      assert.match(pid, /^[0-9a-f-]{36}$/);
      assert.equal((await d.cli(['process', 'stdin', id, pid, 'ping\\n'])).exitCode, 0);
      const out = await d.cli(['process', 'output', id, pid]);
      assert.equal(out.stdout, 'echo ping');
      assert.equal(out.exitCode, 3);
      const status = JSON.parse((await d.cli(['process', 'status', id, pid, '--json'])).stdout);
      assert.deepEqual([status.state, status.exit_code], ['exited', 3]);
      const sleeper = (await d.cli(['process', 'spawn', id, '--', 'sleep', '60'])).stdout.trim();
      assert.equal((await d.cli(['process', 'kill', id, sleeper, '--signal', 'KILL'])).exitCode, 0);
      assert.equal((await d.cli(['process', 'output', id, sleeper])).exitCode, 137);
    });
  });

  test("CLI: a command that takes longer than 5 s still gets its answer (Node's agent times idle sockets out at 5 s)", async () => {
    await withSession(async (id) => {
      const r = await d.cli(['exec', id, '--', 'sh', '-c', 'sleep 6; echo done']);
      assert.equal(r.exitCode, 0, r.stderr);
      assert.equal(r.stdout, 'done');
    });
  });
});
