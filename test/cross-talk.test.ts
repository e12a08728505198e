/**
 * No cross-talk between organizations, attacked as isolation.md lines 12-17 say it must hold:
 * each attack is made as another organization's key or as code in a session, beside a control
 * that shows the attack itself works where it should.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { execa } from 'execa';
import { findMarkedProcesses } from '../daemon/lib/procs.js';
import { CLI, callApi, cleanEnv, startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';

const exec = async (d: TestDaemon, id: string, command: string, key = d.apiKey) => {
  const r = await d.api('POST', `/browsers/${id}/process/exec`, { command: 'sh', args: ['-c', command], timeout_sec: 60 }, key);
  assert.equal(r.status, 200, r.text);
  return {
    code: r.body.exit_code as number,
    out: Buffer.from(r.body.stdout_b64 ?? '', 'base64').toString(),
    err: Buffer.from(r.body.stderr_b64 ?? '', 'base64').toString(),
  };
};

describe('a response is exactly what it says', () => {
  let d: TestDaemon;
  let keyB: string;
  before(async () => {
    d = await startTestDaemon();
    keyB = (await d.cli(['auth', 'create-key', '--org', 'attacker'])).stdout.trim();
  });
  after(async () => {
    await d?.stop();
  });

  const mcp = async (key: string) => {
    const client = new Client({ name: 'cross-talk', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(`${d.baseUrl}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    });
    await client.connect(transport);
    return {
      client,
      close: async () => {
        await transport.terminateSession().catch(() => {});
        await client.close();
      },
    };
  };
  const textOf = (a: unknown) => ((a as { content: { text?: string }[] }).content ?? []).map((c) => c.text ?? '').join('\n');

  test('a FIFO that writes a forged HTTP answer is refused by fs_read_file; two organizations calling /mcp at once each get their own answers', async () => {
    const a = (await d.api('POST', '/browsers', { headless: true })).body;
    const b = (await d.api('POST', '/browsers', { headless: true }, keyB)).body;
    const forged = JSON.stringify([{ session_id: 'forged', cdp_ws_url: 'ws://attacker.example:9999/steal' }]);
    const answer = `\r\nHTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${forged.length}\r\n\r\n${forged}`;
    // The attacker's session: a FIFO, and a writer that sends the forged answer into it again and again.
    await exec(d, b.session_id, 'mkfifo /tmp/trap', keyB);
    const writer = await d.api(
      'POST',
      `/browsers/${b.session_id}/process/spawn`,
      { command: 'sh', args: ['-c', `while :; do printf '%s' '${answer.replace(/'/g, "'\\''")}' > /tmp/trap; done`] },
      keyB,
    );
    assert.equal(writer.status, 200, writer.text);
    // Control: the FIFO does carry the forged answer to a reader in the session.
    const control = await exec(d, b.session_id, 'head -c 200 /tmp/trap', keyB);
    assert.match(control.out, /HTTP\/1\.1 200 OK/);

    const [attacker, victim] = [await mcp(keyB), await mcp(d.apiKey)];
    try {
      const rounds = await Promise.all(
        Array.from({ length: 10 }, async () => {
          const [read, list, mine] = await Promise.all([
            attacker.client.callTool({ name: 'fs_read_file', arguments: { session_id: b.session_id, path: '/tmp/trap' } }),
            victim.client.callTool({ name: 'list_browsers', arguments: {} }),
            attacker.client.callTool({ name: 'list_browsers', arguments: {} }),
          ]);
          return { read, list: textOf(list), mine: textOf(mine) };
        }),
      );
      for (const r of rounds) {
        assert.equal((r.read as { isError?: boolean }).isError, true);
        assert.match(textOf(r.read), /^400 bad_request: path: \/tmp\/trap is not a regular file \(fifo\)/);
        // Each organization's list is its own: the victim's never the forged one, the attacker's never the victim's.
        assert.deepEqual(
          JSON.parse(r.list).map((s: { session_id: string }) => s.session_id),
          [a.session_id],
        );
        assert.deepEqual(
          JSON.parse(r.mine).map((s: { session_id: string }) => s.session_id),
          [b.session_id],
        );
      }
      // The kernel's own files, whose sizes say nothing of their content, are refused too.
      const proc = await attacker.client.callTool({ name: 'fs_read_file', arguments: { session_id: b.session_id, path: '/proc/self/environ' } });
      assert.match(textOf(proc), /^400 bad_request: .*kernel's/);
    } finally {
      await attacker.close();
      await victim.close();
    }
    await d.api('DELETE', `/browsers/${a.session_id}`);
    await d.api('DELETE', `/browsers/${b.session_id}`, undefined, keyB);
  });

  test('a file that grows while it is read gives one well-formed answer, and the next request on the same connection its own', async () => {
    const s = (await d.api('POST', '/browsers', { headless: true })).body;
    await d.api('POST', `/browsers/${s.session_id}/process/spawn`, {
      command: 'sh',
      args: ['-c', 'while :; do head -c 65536 /dev/zero | tr "\\0" x >> /tmp/growing; done'],
    });
    await waitFor(async () => Number((await exec(d, s.session_id, 'stat -c %s /tmp/growing')).out.trim()) > 1_000_000, 30_000, 'the file to grow');
    // One socket for both requests, as a keep-alive client would reuse it.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = (path: string) =>
      new Promise<{ status: number; body: Buffer; headers: Record<string, unknown> }>((resolve, reject) => {
        const req = request(`${d.baseUrl}${path}`, { agent, headers: { authorization: `Bearer ${d.apiKey}` } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), headers: res.headers }));
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end();
      });
    try {
      for (let i = 0; i < 3; i++) {
        const read = await get(`/browsers/${s.session_id}/fs/read_file?path=/tmp/growing`);
        assert.equal(read.status, 200);
        assert.ok(read.body.length > 1_000_000 && /^x+$/.test(read.body.toString('latin1', 0, 1000)), `${read.body.length} bytes`);
        const next = await get('/browsers');
        assert.equal(next.status, 200);
        assert.deepEqual(
          (JSON.parse(next.body.toString()) as { session_id: string }[]).map((x) => x.session_id),
          [s.session_id],
        );
      }
    } finally {
      agent.destroy();
    }
    await d.api('DELETE', `/browsers/${s.session_id}`);
  });
});

test("nothing the daemon's starter left open reaches a session: a writable descriptor to a host file stays out of every box", async () => {
  const home = await mkdtemp(join(tmpdir(), 'rbrowse-test-'));
  const secret = join(tmpdir(), `rbrowse-host-secret-${process.pid}`);
  await writeFile(secret, 'root only\n', { mode: 0o600 });
  const env = cleanEnv(home);
  try {
    // Control: a program started with the descriptor does write through it.
    await execa('bash', ['-c', 'exec 240>>"$1"; bash -c "echo control >&240"', 'control', secret]);
    assert.match(await readFile(secret, 'utf8'), /control/);
    // The daemon's starter leaves fd 240 open on the file (a shell redirection), as the attack did.
    const started = await execa('bash', ['-c', 'exec 240>>"$1"; exec "$2" daemon start', 'start', secret, CLI], {
      env,
      extendEnv: false,
      reject: false,
    });
    assert.equal(started.exitCode, 0, started.stderr);
    const baseUrl = started.stdout.trim();
    const key = (await execa(CLI, ['auth', 'token'], { env, extendEnv: false })).stdout.trim();
    const d = { baseUrl, apiKey: key, api: (m: string, p: string, b?: unknown, k = key) => callApi(baseUrl, m, p, b, k) } as TestDaemon;
    const s = (await d.api('POST', '/browsers', { headless: true })).body;
    // bash, which takes any descriptor number (dash refuses one above 9 before trying it).
    const attack = await exec(d, s.session_id, 'bash -c "echo pwned >&240 && echo wrote"');
    assert.notEqual(attack.code, 0, attack.out);
    assert.match(attack.err, /240: Bad file descriptor/);
    assert.doesNotMatch(await readFile(secret, 'utf8'), /pwned/);
    // Nor does the daemon or anything it started hold it.
    const daemon = JSON.parse(await readFile(join(home, 'daemon.json'), 'utf8')).pid as number;
    for (const pid of [daemon, ...(await findMarkedProcesses(home))]) {
      for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [] as string[])) {
        assert.notEqual(await readlink(`/proc/${pid}/fd/${fd}`).catch(() => ''), secret, `pid ${pid} holds the file as fd ${fd}`);
      }
    }
  } finally {
    await execa(CLI, ['daemon', 'stop'], { env, extendEnv: false, reject: false });
    await waitFor(async () => (await findMarkedProcesses(home)).length === 0, 20_000, 'the daemon to end');
    await rm(home, { recursive: true, force: true });
    await rm(secret, { force: true });
  }
});
