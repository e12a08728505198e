/**
 * No cross-talk between organizations, attacked as isolation.md lines 12-17 say it must hold:
 * each attack is made as another organization's key or as code in a session, beside a control
 * that shows the attack itself works where it should.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
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

describe("one rule for the host's loopback: what the daemon connects to for a session, the session itself may reach", () => {
  let service: Server;
  let port: number;
  before(async () => {
    service = createServer((_req, res) => res.end('the host service'));
    await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
    port = (service.address() as AddressInfo).port;
  });
  after(async () => {
    await new Promise<void>((resolve) => service.close(() => resolve()));
  });

  /** From inside the session: a request straight, and through the session's own proxy forwarder (Chromium's --proxy-server). */
  async function fromSession(d: TestDaemon, id: string, target: string): Promise<{ direct: string; viaForwarder: string }> {
    const forwarder = (
      await exec(d, id, "tr '\\0' '\\n' < /proc/$(pgrep -o -f 'proxy-server=')/cmdline | sed -n 's/^--proxy-server=//p' | head -1")
    ).out.trim();
    assert.match(forwarder, /^http:\/\/127\.0\.0\.1:\d+$/, 'the forwarder of the session');
    const curl = (args: string) => exec(d, id, `curl -s -m 10 ${args} ${target}; echo " [exit $?]"`);
    return { direct: (await curl('')).out, viaForwarder: (await curl(`-x ${forwarder}`)).out };
  }

  for (const mode of ['on', 'off'] as const) {
    test(`RBROWSE_HOST_LOOPBACK=${mode}: the forwarder, browser curl and proxy checks reach the host's loopback only when the session does; link-local never`, async () => {
      const d = await startTestDaemon({ env: { RBROWSE_HOST_LOOPBACK: mode } });
      try {
        const s = (await d.api('POST', '/browsers', { headless: true })).body;
        const loopback = await fromSession(d, s.session_id, `http://127.0.0.1:${port}/`);
        if (mode === 'on') {
          // Control: open to sessions, both ways reach it.
          assert.match(loopback.direct, /the host service/);
          assert.match(loopback.viaForwarder, /the host service/);
        } else {
          assert.doesNotMatch(loopback.direct, /the host service/);
          assert.doesNotMatch(loopback.viaForwarder, /the host service/, loopback.viaForwarder);
        }
        // Link-local (the metadata service's address) is never connected to for a session.
        const metadata = await fromSession(d, s.session_id, 'http://169.254.169.254/latest/meta-data/');
        assert.match(metadata.viaForwarder, /rbrowse: 169\.254\.169\.254 is a link-local, metadata or broadcast address/, metadata.viaForwarder);
        // Browser curl goes the browser's way, through the forwarder, under the same rule.
        const curled = await d.api('POST', `/browsers/${s.session_id}/curl`, { url: `http://[::ffff:127.0.0.1]:${port}/` });
        if (mode === 'on') assert.match(curled.text, /the host service/);
        else assert.doesNotMatch(curled.text, /the host service/);

        // A proxy check connects to the proxy alone, and only where a session could.
        const onLoopback = (await d.api('POST', '/proxies', { type: 'custom', config: { host: '127.0.0.1', port } })).body;
        const checked = (await d.api('POST', `/proxies/${onLoopback.id}/check`, {})).body;
        assert.equal(checked.status, mode === 'on' ? 'available' : 'unavailable', JSON.stringify(checked));
        const metadataProxy = (await d.api('POST', '/proxies', { type: 'custom', config: { host: '169.254.169.254', port: 80 } })).body;
        assert.equal((await d.api('POST', `/proxies/${metadataProxy.id}/check`, {})).body.status, 'unavailable');
        await d.api('DELETE', `/browsers/${s.session_id}`);
      } finally {
        await d.stop();
      }
    });
  }
});

test('the addresses out of a session’s reach (pure)', async () => {
  const { refusedAddress } = await import('../daemon/lib/reach.js');
  const open = { hostLoopback: true };
  const closed = { hostLoopback: false };
  for (const a of ['169.254.169.254', '::ffff:169.254.169.254', 'fe80::1', '0.0.0.0', '::', '100.100.100.200', 'fd00:ec2::254', '224.0.0.1']) {
    assert.ok(refusedAddress(a, open), `${a} is never reached`);
  }
  for (const a of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']) {
    assert.equal(refusedAddress(a, open), undefined, `${a} with the loopback open`);
    assert.ok(refusedAddress(a, closed), `${a} with it closed`);
  }
  for (const a of ['93.184.216.34', '10.0.0.5', '192.168.1.1', '2606:4700::1111']) assert.equal(refusedAddress(a, closed), undefined, a);
});

test("one session's flood of 3,000 connections to the host's loopback takes its share only: another organization creates, drives and changes state meanwhile", async () => {
  const held: import('node:net').Socket[] = [];
  const service = (await import('node:net')).createServer((socket) => {
    held.push(socket);
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
  const port = (service.address() as AddressInfo).port;
  const d = await startTestDaemon({ env: { RBROWSE_SESSION_HOST_CONNECTIONS: '200' } });
  try {
    const keyB = (await d.cli(['auth', 'create-key', '--org', 'bystander'])).stdout.trim();
    const flooder = (await d.api('POST', '/browsers', { headless: true })).body;
    const flood = `const net = require('net'); let ok = 0; for (let i = 0; i < 3000; i++) { const s = net.connect(${port}, '127.0.0.1'); s.on('connect', () => ok++); s.on('error', () => {}); } setTimeout(() => { console.log(ok); }, 60000).unref(); setInterval(() => {}, 1000);`;
    const spawned = await d.api('POST', `/browsers/${flooder.session_id}/process/spawn`, { command: 'node', args: ['-e', flood] });
    assert.equal(spawned.status, 200, spawned.text);
    // Control: the flood does reach the host service, as many as its share.
    await waitFor(() => held.length >= 200, 60_000, 'the flood to reach the host service');
    await new Promise((r) => setTimeout(r, 2000));
    assert.ok(held.filter((s) => !s.destroyed).length <= 200, `${held.filter((s) => !s.destroyed).length} held at once`);
    // Another organization meanwhile: a create, a CDP call, a change of state.
    const s = (await d.api('POST', '/browsers', { headless: true }, keyB)).body;
    assert.ok(s.session_id, JSON.stringify(s));
    const { chromium } = await import('playwright');
    const browser = await chromium.connectOverCDP(s.cdp_ws_url);
    const page = browser.contexts()[0]!.pages()[0]!;
    await page.setContent('<title>unbothered</title>');
    assert.equal(await page.title(), 'unbothered');
    await browser.close();
    assert.equal((await d.api('POST', '/profiles', { name: 'during-the-flood' }, keyB)).status, 200);
    assert.equal((await d.api('DELETE', `/browsers/${s.session_id}`, undefined, keyB)).status, 204);
    await d.api('DELETE', `/browsers/${flooder.session_id}`);
  } finally {
    await d.stop();
    for (const socket of held) socket.destroy();
    await new Promise<void>((resolve) => service.close(() => resolve()));
  }
});

test('the limits granted add up to no more than the machine may give: a session past them is refused with 429, the boxes’ parent group is held to the machine, doctor says so', async () => {
  const { totalmem } = await import('node:os');
  const { readFile: read } = await import('node:fs/promises');
  const share = totalmem() - 1024 ** 3;
  // Sessions of a third of the boxes' share each, no overcommit: the third one is past it.
  const per = Math.floor(share / 3 / 1024 ** 2) + 1;
  const d = await startTestDaemon({ env: { RBROWSE_MEMORY_OVERCOMMIT: '1', RBROWSE_SESSION_MEMORY: `${per}m` } });
  try {
    const a = await d.api('POST', '/browsers', { headless: true });
    const b = await d.api('POST', '/browsers', { headless: true });
    assert.equal(a.status, 200, a.text);
    assert.equal(b.status, 200, b.text);
    const c = await d.api('POST', '/browsers', { headless: true });
    assert.equal(c.status, 429, c.text);
    assert.match(c.body.message, /memory is granted: .* RBROWSE_SESSION_MEMORY/);
    assert.ok(c.headers.get('retry-after'));
    // Control: once one ends, the next create has its room.
    await d.api('DELETE', `/browsers/${a.body.session_id}`);
    await waitFor(async () => (await d.api('POST', '/browsers', { headless: true })).status === 200, 30_000, 'room for a session again');
    // The parent group of every box of this daemon is limited to the boxes' share.
    const cgroup = (await read('/proc/self/cgroup', 'utf8'))
      .split('\n')
      .find((l) => /:memory:/.test(l))
      ?.split(':')[2];
    if (cgroup !== undefined) {
      const { createHash } = await import('node:crypto');
      const tag = `rbrowse-${createHash('sha256').update(d.home).digest('hex').slice(0, 12)}`;
      const limit = await read(`/sys/fs/cgroup/memory${cgroup === '/' ? '' : cgroup}/${tag}/memory.limit_in_bytes`, 'utf8').catch(() => '');
      if (limit) assert.ok(Math.abs(Number(limit) - share) < 1024 ** 2 * 8, `parent limit ${limit} for a share of ${share}`);
    }
    const doctor = await d.cli(['doctor']);
    assert.match(doctor.stdout, /limits total .* RBROWSE_MEMORY_OVERCOMMIT 1/);
    for (const s of (await d.api('GET', '/browsers')).body as { session_id: string }[]) await d.api('DELETE', `/browsers/${s.session_id}`);
  } finally {
    await d.stop();
  }
});
