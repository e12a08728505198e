import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Kernel from '@onkernel/sdk';
import { execa } from 'execa';
import { CLI, startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';

let d: TestDaemon;
let kernel: Kernel;
let id: string;
before(async () => {
  d = await startTestDaemon();
  kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
  id = (await kernel.browsers.create({ headless: true })).session_id;
});
after(async () => {
  await d?.stop();
});

const exec = (script: string) => kernel.browsers.process.exec(id, { command: 'sh', args: ['-c', script] });

describe('logs', () => {
  test('a file inside the session: whole without follow (the stream ends), new lines with it', async () => {
    await exec('printf "one\\ntwo\\nthree" > /tmp/app.log');
    const whole: any[] = [];
    for await (const ev of await kernel.browsers.logs.stream(id, { source: 'path', path: '/tmp/app.log', follow: false }))
      if (ev.event === 'log') whole.push(ev);
    assert.deepEqual(
      whole.map((e) => e.message),
      ['one', 'two', 'three'],
    );
    assert.ok(whole.every((e) => e.event === 'log' && !Number.isNaN(Date.parse(e.timestamp))));

    const followed: string[] = [];
    const controller = new AbortController();
    const asked = Date.now();
    const stream = await kernel.browsers.logs.stream(id, { source: 'path', path: '/tmp/app.log', follow: true }, { signal: controller.signal });
    // The response starts at once, though nothing is written yet (not at the first heartbeat, 15 s on).
    assert.ok(Date.now() - asked < 5000, `the stream took ${Date.now() - asked} ms to start`);
    const reading = (async () => {
      try {
        for await (const ev of stream) if (ev.event === 'log') followed.push(ev.message);
      } catch {
        // aborted
      }
    })();
    // tail -F starts at the end: what is added from now on comes, nothing before.
    await waitFor(
      async () => {
        await exec('echo "four $(date +%s%N)" >> /tmp/app.log');
        return followed.some((m) => m.startsWith('four '));
      },
      15_000,
      'an appended line',
    );
    assert.ok(!followed.includes('one'));
    controller.abort();
    await reading;
  });

  test("the session's Chromium log (source supervisor, chromium)", async () => {
    const lines: string[] = [];
    for await (const ev of await kernel.browsers.logs.stream(id, { source: 'supervisor', supervisor_process: 'chromium', follow: false }))
      if (ev.event === 'log') lines.push(ev.message);
    assert.ok(
      lines.some((l) => l.startsWith('DevTools listening on ws://')),
      lines.slice(0, 5).join('\n'),
    );
  });

  test('refusals: 400 without a path, 404 for a missing file, an unknown program or another org', async () => {
    const base = `/browsers/${id}/logs/stream`;
    assert.equal((await d.api('GET', `${base}?source=path`)).status, 400);
    assert.equal((await d.api('GET', `${base}?source=path&path=relative`)).status, 400);
    assert.equal((await d.api('GET', `${base}?source=nope`)).status, 400);
    assert.equal((await d.api('GET', `${base}?source=path&path=/tmp/missing.log`)).status, 404);
    assert.equal((await d.api('GET', `${base}?source=path&path=/tmp`)).status, 400);
    assert.equal((await d.api('GET', `${base}?source=supervisor&supervisor_process=nginx`)).status, 404);
    const key = (await d.cli(['auth', 'create-key', '--org', 'logs-other'])).stdout.trim();
    assert.equal((await d.api('GET', `${base}?source=supervisor&supervisor_process=chromium&follow=false`, undefined, key)).status, 404);
  });

  test('CLI: rbrowse logs prints the Chromium log; --path -f follows a file until interrupted', async () => {
    const r = await d.cli(['logs', id]);
    assert.equal(r.exitCode, 0, r.stderr);
    assert.match(r.stdout, /DevTools listening on ws:\/\//);
    await exec(': > /tmp/cli.log');
    const cli = execa(CLI, ['logs', id, '-f', '--path', '/tmp/cli.log'], { env: d.env, reject: false });
    let out = '';
    cli.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    await waitFor(
      async () => {
        await exec('echo followed-line >> /tmp/cli.log');
        return out.includes('followed-line');
      },
      15_000,
      'the CLI to print the new line',
    );
    cli.kill('SIGINT');
    assert.equal((await cli).exitCode, 0);
  });
});
