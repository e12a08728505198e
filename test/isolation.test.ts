// The promise of ../shared/spec/isolation.md, lines 1-8, tried as an attacker: as a second
// organization's key, as code inside a session and an app, and as another local uid. Each attack
// has its control: the same machinery pointed where it should work (a raw Chromium, Xvfb and
// x11vnc the test starts itself, the session's own processes and files), so a pass means the
// attack was stopped, not that it was broken. Lines 9-11 (the front door) are front-door.test.ts;
// shared memory (line 4) is shared-memory.test.ts.
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Kernel, { toFile } from '@onkernel/sdk';
import { execa } from 'execa';
import { chromium } from 'playwright';
import { spawn } from 'node:child_process';
import { findMarkedProcesses, markedEnv } from '../daemon/lib/procs.js';
import { diskOf } from './helpers/box.js';
import { startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';
import { startFixtureServer } from './helpers/fixtures.js';
import { startFixtureProxy, type FixtureProxy } from './helpers/forward-proxy.js';
import { reachedSessions, SCAN_SCRIPT, scanAsLocalUser, startExposedTargets, type Reach } from './helpers/scanner.js';
import { listeningSockets } from './helpers/viewer.js';
import { zipOf } from './helpers/zip.js';

const root = process.getuid?.() === 0;
const needsRoot = root ? false : 'acting as other uids takes root';

let d: TestDaemon;
/** The victim: the default organization. The intruder: a second organization's key. */
let victimKey: string;
let intruderKey: string;
let secrets: { name: string; value: string }[];
let proxy: FixtureProxy;
/** A's session (headful, with a proxy: display, VNC server and forwarder all running); B's (headless). */
let a: string;
let b: string;

before(async () => {
  d = await startTestDaemon({
    env: { RBROWSE_SESSION_PIDS: '400', RBROWSE_SESSION_MEMORY: '768m', RBROWSE_SESSION_SHM: '32m', RBROWSE_SESSION_DISK: '64m' },
  });
  victimKey = d.apiKey;
  intruderKey = (await d.cli(['auth', 'create-key', '--org', 'intruder'])).stdout.trim();
  assert.match(intruderKey, /^sk_/);
  const creds = join(d.home, 'credentials');
  secrets = [{ name: 'RBROWSE_HOME', value: d.home }, ...(await readdir(creds)).map((f) => ({ name: f, value: '' }))];
  for (const s of secrets.slice(1)) s.value = (await readFile(join(creds, s.name), 'utf8')).trim();
  secrets = secrets.filter((s) => s.value.length >= 16 || s.name === 'RBROWSE_HOME');

  proxy = await startFixtureProxy({ label: 'victim-proxy', username: 'victim', password: 'proxy-password-of-the-victim' });
  const p = await d.api('POST', '/proxies', {
    type: 'custom',
    name: 'victims',
    config: { host: '127.0.0.1', port: proxy.port, username: 'victim', password: 'proxy-password-of-the-victim' },
  });
  assert.equal(p.status, 200, p.text);
  const sa = await d.api('POST', '/browsers', { viewport: { width: 1024, height: 768 }, proxy_id: p.body.id, timeout_seconds: 900 });
  assert.equal(sa.status, 200, sa.text);
  a = sa.body.session_id;
  const sb = await d.api('POST', '/browsers', { headless: true, timeout_seconds: 900 }, intruderKey);
  assert.equal(sb.status, 200, sb.text);
  b = sb.body.session_id;
});

after(async () => {
  await d?.stop();
  await proxy?.close();
});

interface Ran {
  code: number;
  out: string;
  err: string;
}

async function sh(id: string, key: string, script: string, env?: Record<string, string>): Promise<Ran> {
  const r = await d.api(
    'POST',
    `/browsers/${id}/process/exec`,
    { command: 'sh', args: ['-c', script], ...(env ? { env } : {}), timeout_sec: 60 },
    key,
  );
  assert.equal(r.status, 200, r.text);
  const text = (s?: string) => Buffer.from(s ?? '', 'base64').toString();
  return { code: r.body.exit_code, out: text(r.body.stdout_b64), err: text(r.body.stderr_b64) };
}
const inA = (script: string, env?: Record<string, string>) => sh(a, victimKey, script, env);
const inB = (script: string, env?: Record<string, string>) => sh(b, intruderKey, script, env);

async function upload(id: string, key: string, path: string, content: string): Promise<void> {
  const res = await fetch(`${d.baseUrl}/browsers/${id}/fs/write_file?path=${encodeURIComponent(path)}&mode=0755`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream' },
    body: content,
  });
  assert.ok(res.ok, await res.text());
}

/** The host uids of a session's processes (its box root and its user). */
async function hostUids(id: string): Promise<Set<number>> {
  const uids = new Set<number>();
  for (const pid of await findMarkedProcesses(d.home, id)) {
    const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    const uid = /^Uid:\s+(\d+)/m.exec(status)?.[1];
    if (uid) uids.add(Number(uid));
  }
  return uids;
}

/** A host directory anyone may write to: where code that escaped would leave its mark. */
async function markerDir(): Promise<{ dir: string; list(): Promise<string[]>; close(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'rbrowse-marks-'));
  await chmod(dir, 0o777);
  return { dir, list: () => readdir(dir), close: () => rm(dir, { recursive: true, force: true }) };
}

/** The display number an X socket's name ends with. */
const displayOf = (name: string) => Number(/X(\d+)$/.exec(name)?.[1]);

/** Every secret of the daemon a text holds. */
const leaked = (text: string) => secrets.filter((s) => text.includes(s.value)).map((s) => s.name);

/** The looking-around an intruder does inside: its environment, every command line and environment it can read, its files. */
const LOOK_AROUND = [
  'env',
  'for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline 2>/dev/null; echo; tr "\\0" "\\n" < $p/environ 2>/dev/null; done',
  'grep -r -a -h -o -I --exclude-dir=node_modules -e "$NEEDLE_1" -e "$NEEDLE_2" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=usr 2>/dev/null | head -20',
].join('\n');

describe("the daemon's own privileges (lines 1-3)", () => {
  test('exec: env, PATH, LD_PRELOAD and NODE_OPTIONS pointing at planted programs run nothing on the host', { skip: needsRoot }, async () => {
    const marks = await markerDir();
    try {
      // The intruder plants programs under every name a host-side start could look up, and a preload.
      const home = `${await diskOf(b)}/home`;
      const planted = `#!/bin/sh\nid -u > ${marks.dir}/ran-as-$(id -u)-$$ 2>/dev/null\nexit 0\n`;
      assert.equal((await inB('mkdir -p /home/kernel/bin')).code, 0);
      for (const name of ['bwrap', 'setpriv', 'sh', 'env', 'node', 'pasta', 'prlimit', 'nice', 'timeout'])
        await upload(b, intruderKey, `/home/kernel/bin/${name}`, planted);
      await upload(b, intruderKey, '/home/kernel/evil.cjs', `require('fs').writeFileSync('${marks.dir}/node-options-' + process.pid, 'x');`);
      const env = {
        PATH: `${home}/bin:/home/kernel/bin:/usr/bin:/bin`,
        LD_PRELOAD: `${home}/evil.so`,
        NODE_OPTIONS: `--require ${home}/evil.cjs`,
        BASH_ENV: `${home}/bin/sh`,
        ENV: `${home}/bin/sh`,
      };
      const r = await inB('echo inside; id -u', env);
      // The planted sh is first on the session's own PATH, so the command itself ran it: that
      // one is the session's, as the session's user, and its mark (a host path) went nowhere.
      assert.equal(r.code, 0, r.err);
      await new Promise((res) => setTimeout(res, 500));
      assert.deepEqual(await marks.list(), [], 'nothing planted ran on the host');

      // Control: the planted program and preload do leave marks when the host runs them.
      await execa(`${home}/bin/bwrap`, []);
      await execa(process.execPath, ['-e', '0'], { env: { NODE_OPTIONS: `--require ${home}/evil.cjs` } });
      assert.equal((await marks.list()).length, 2, 'the planted program and the preload work where they run');
    } finally {
      await marks.close();
    }
  });

  test("what a session sees holds no RBROWSE_HOME, host path or daemon secret; the host's own look finds them", async () => {
    const needles = { NEEDLE_1: d.home, NEEDLE_2: secrets.find((s) => s.name === 'admin-token')!.value };
    for (const [who, run] of [
      ['A', inA],
      ['B', inB],
    ] as const) {
      const r = await run(LOOK_AROUND, needles);
      const seen = r.out.replaceAll(needles.NEEDLE_1, '').replaceAll(needles.NEEDLE_2, '');
      // The needles themselves are in the look's own environment: anything else found is a leak.
      assert.deepEqual(leaked(seen), [], `${who} found a secret`);
      assert.ok(r.out.includes('USER=kernel'), `${who}'s look saw its environment`);
    }
    // Control: the same look on the host (its files: the daemon's home) finds them.
    // (its grep only: the look's own environment holds the needles)
    const grep = LOOK_AROUND.split('\n')[2]!.replace(' / ', ` ${d.home} `);
    const host = await execa('sh', ['-c', grep], { env: needles, reject: false });
    assert.ok(leaked(host.stdout).includes('admin-token'), 'the look finds a secret where it is');
  });

  test('a profile saved from a session that planted links to host secrets holds none of them; its plain files do travel', async () => {
    const created = await d.api('POST', '/profiles', { name: 'planted' }, intruderKey);
    assert.equal(created.status, 200, created.text);
    const s = await d.api('POST', '/browsers', { headless: true, profile: { name: 'planted', save_changes: true } }, intruderKey);
    assert.equal(s.status, 200, s.text);
    const id = s.body.session_id;
    // Links aimed at the daemon's credentials (as if the session knew the host path): inside a
    // copy of the user data, and the whole user-data directory swapped for that copy by a loop
    // that keeps it so until the very end.
    const creds = join(d.home, 'credentials');
    await inSession(
      id,
      `cd /home/kernel && cp -a user-data kept && cd kept && echo travels > plain-file && ln -s ${creds} creds-dir && ln -s ${creds}/admin-token token-file`,
    );
    const loop = await d.api(
      'POST',
      `/browsers/${id}/process/spawn`,
      {
        command: 'sh',
        args: [
          '-c',
          'cd /home/kernel; while :; do [ "$(readlink user-data)" = /home/kernel/kept ] || { rm -rf user-data; ln -s /home/kernel/kept user-data; }; sleep 0.01; done',
        ],
      },
      intruderKey,
    );
    assert.equal(loop.status, 200, loop.text);
    await waitFor(
      async () => (await inSession(id, 'readlink /home/kernel/user-data')).out.trim() === '/home/kernel/kept',
      10_000,
      'the link in place',
    );
    assert.equal((await d.api('DELETE', `/browsers/${id}`, undefined, intruderKey)).status, 204);

    const res = await fetch(`${d.baseUrl}/profiles/planted/download`, { headers: { authorization: `Bearer ${intruderKey}` } });
    assert.equal(res.status, 200);
    const tar = Buffer.from(await res.arrayBuffer()).toString('latin1');
    assert.deepEqual(leaked(tar), [], 'no secret in the saved profile');
    assert.ok(!/creds-dir|token-file/.test(tar), 'a planted link does not travel');
    // Control: the save read what the session left, through its own link (the copy's plain file travels).
    assert.ok(tar.includes('plain-file') && tar.includes('travels'), 'the plain file travels');

    async function inSession(sid: string, script: string) {
      return sh(sid, intruderKey, script);
    }
  });

  test('a profile loaded in place (PATCH) while the session holds user-data as a link to a host directory leaves that directory alone', async () => {
    const host = await mkdtemp(join(tmpdir(), 'rbrowse-root-owned-'));
    try {
      await writeFile(join(host, 'owned-by-root'), 'root');
      const before = await stat(join(host, 'owned-by-root'));
      // The profile the save test above left (its plain file travelled), loaded again.
      // The attack, in a session without a profile yet: a loop keeps user-data a link to the host directory.
      const c = (await d.api('POST', '/browsers', { headless: true }, intruderKey)).body.session_id;
      try {
        const loop = await d.api(
          'POST',
          `/browsers/${c}/process/spawn`,
          {
            command: 'sh',
            args: [
              '-c',
              `cd /home/kernel; while :; do [ "$(readlink user-data)" = ${host} ] || { rm -rf user-data; ln -s ${host} user-data; }; sleep 0.005; done`,
            ],
          },
          intruderKey,
        );
        assert.equal(loop.status, 200, loop.text);
        // The race is the session's own to lose: a 409 (its loop changed user-data between the daemon's steps) or a 200.
        const patched = await d.api('PATCH', `/browsers/${c}`, { profile: { name: 'planted' } }, intruderKey);
        assert.ok([200, 409].includes(patched.status), patched.text);
        assert.deepEqual(await readdir(host), ['owned-by-root'], 'nothing was unpacked into the host directory');
        const after = await stat(join(host, 'owned-by-root'));
        assert.deepEqual([after.uid, after.gid, (await stat(host)).uid], [before.uid, before.gid, process.getuid?.()], 'nothing there changed owner');
      } finally {
        await d.api('DELETE', `/browsers/${c}`, undefined, intruderKey);
      }
      // Control: without the loop, the same PATCH loads the profile into the session's own user data.
      const loaded = await d.api('PATCH', `/browsers/${b}`, { profile: { name: 'planted' } }, intruderKey);
      assert.equal(loaded.status, 200, loaded.text);
      assert.equal((await sh(b, intruderKey, 'cat /home/kernel/user-data/plain-file')).out, 'travels\n');
    } finally {
      await rm(host, { recursive: true, force: true });
    }
  });

  test('an app (its npm install scripts and its actions) runs in a box of its own: no root, no daemon secret, no host files', async () => {
    const marks = await markerDir();
    const hostFile = join(marks.dir, 'host-file');
    await writeFile(hostFile, 'a file of the host');
    await chmod(hostFile, 0o644);
    const kernel = new Kernel({ apiKey: intruderKey, baseURL: d.baseUrl });
    try {
      const files = [
        {
          name: 'index.ts',
          data: [
            "import { spawnSync } from 'node:child_process';",
            "import Kernel from '@onkernel/sdk';",
            "const app = new Kernel().app('probe');",
            "app.action('sh', async (_ctx, p?: { script: string }) => {",
            "  const r = spawnSync('sh', ['-c', p!.script], { encoding: 'utf8', env: { ...process.env, ...(p as any).env } });",
            '  return { code: r.status, stdout: r.stdout, stderr: r.stderr, uid: process.getuid!(), env: process.env };',
            '});',
          ].join('\n'),
        },
        {
          name: 'package.json',
          data: JSON.stringify({
            name: 'probe',
            type: 'module',
            dependencies: { 'local-lib': 'file:./local-lib' },
            scripts: { preinstall: `echo "preinstall as $(id -u)"; id -u > ${marks.dir}/preinstall; cat ${d.home}/credentials/admin-token; true` },
          }),
        },
        { name: 'local-lib/package.json', data: '{"name":"local-lib","version":"1.0.0"}' },
      ];
      const created = await kernel.deployments.create({ file: await toFile(await zipOf(files), 'probe.zip'), entrypoint_rel_path: 'index.ts' });
      const events: any[] = [];
      for await (const e of await kernel.deployments.follow(created.id)) events.push(e);
      const logs = events.filter((e) => e.event === 'log').map((e) => e.message as string);
      assert.equal(events.at(-1)?.deployment?.status, 'running', JSON.stringify(events.slice(-3)));
      // Control: the install script ran (its output is in the build's log)...
      assert.ok(
        logs.some((l) => /^preinstall as \d+$/.test(l) && l !== 'preinstall as 0'),
        logs.join('\n'),
      );
      // ...but not as root, and not on the host.
      assert.deepEqual(await marks.list(), ['host-file']);
      // (the script's own text names the home: only what it read would be a leak)
      assert.deepEqual(leaked(logs.join('\n').replaceAll(d.home, '')), []);

      const run = async (script: string) => {
        const r = await kernel.invocations.create({ app_name: 'probe', version: 'latest', action_name: 'sh', payload: JSON.stringify({ script }) });
        assert.equal(r.status, 'succeeded', r.status_reason ?? '');
        return JSON.parse(r.output!) as Ran & { stdout: string; stderr: string; uid: number; env: Record<string, string> };
      };
      const look = await run(
        `cat /etc/shadow ${d.home}/credentials/admin-token ${hostFile} 2>&1; ls /root 2>&1; id -u > ${marks.dir}/action; ${LOOK_AROUND.replaceAll('$NEEDLE_1', d.home).replaceAll('$NEEDLE_2', secrets.find((s) => s.name === 'admin-token')!.value)}`,
      );
      assert.notEqual(look.uid, 0);
      assert.deepEqual(leaked(look.stdout.replaceAll(d.home, '').replaceAll(secrets.find((s) => s.name === 'admin-token')!.value, '')), []);
      assert.doesNotMatch(look.stdout, /a file of the host|root:/);
      assert.deepEqual(await marks.list(), ['host-file']);
      assert.deepEqual(
        Object.keys(look.env).filter((k) => k.startsWith('RBROWSE_')),
        [],
      );
      // Its key is minted for the invocation alone: it ended with it.
      assert.equal(look.env.KERNEL_API_KEY?.startsWith('sk_'), true);
      assert.equal((await d.api('GET', `/browsers/${a}`, undefined, look.env.KERNEL_API_KEY)).status, 401);
    } finally {
      await marks.close();
    }
  });
});

describe('between sessions, apps and the host (lines 4-7)', () => {
  test("no local user and no other session reaches a session's DevTools port, X display or VNC server; the same scan reaches a raw Chromium, Xvfb and x11vnc", {
    skip: needsRoot,
  }, async () => {
    const exposed = await startExposedTargets();
    try {
      // Another local uid, on the host.
      const local = (await waitFor(
        async () => {
          const r = await scanAsLocalUser();
          return r.rfb.includes(exposed.rfb) && r.devtools.includes(exposed.devtools) ? r : undefined;
        },
        30_000,
        'the scan to see the raw x11vnc',
      ))!;
      // The controls are reached; nothing reached is a session's (what else the machine runs, a
      // desktop's X server or a developer's own Chromium, is the host's and may be reached too).
      assert.ok(local.x.map(displayOf).includes(exposed.display), `the raw Xvfb: ${JSON.stringify(local)}`);
      assert.deepEqual(await reachedSessions(d.home, local), [], 'no session is reached');
      // Control of that check: a listener marked as one of this daemon's sessions is reported.
      const planted = spawn(
        process.execPath,
        ['-e', "require('net').createServer().listen(0, '127.0.0.1', function () { console.log(this.address().port) })"],
        {
          env: markedEnv(d.home, 'planted'),
          stdio: ['ignore', 'pipe', 'ignore'],
        },
      );
      try {
        let out = '';
        planted.stdout!.on('data', (b: Buffer) => (out += b));
        const port = Number(await waitFor(() => /^(\d+)\n/.exec(out)?.[1], 10_000, 'the planted listener'));
        assert.match((await reachedSessions(d.home, { devtools: [port], rfb: [], x: [], ports: [] })).join(), /devtools/);
      } finally {
        planted.kill('SIGKILL');
      }

      // Code in another organization's session: the host's loopback services reach it (raw
      // Chromium included), and its own browser; A's are not among them.
      await upload(b, intruderKey, '/home/kernel/scan.cjs', SCAN_SCRIPT);
      const inside = (await waitFor(
        async () => {
          const r = await inB('/opt/rbrowse/bin/node /home/kernel/scan.cjs');
          const reach = JSON.parse(r.out) as Reach;
          // Both controls: a busy machine sometimes times a probe out, and the next scan sees it.
          return reach.devtools.includes(exposed.devtools) && reach.rfb.includes(exposed.rfb) ? reach : undefined;
        },
        30_000,
        "B's scan to reach the host's loopback",
      ))!;
      assert.ok(inside.devtools.length >= 2, `its own Chromium and the raw one: ${JSON.stringify(inside)}`);
      assert.deepEqual(await reachedSessions(d.home, inside), [], "no other session is reached from B (B's own port is in its own namespace)");
      assert.deepEqual(inside.x, [], 'no X display: B is headless, and the host and A have their own');

      // Nothing of A (its browser, display, VNC server, proxy forwarder) listens in the host's network.
      const sockets = await listeningSockets(d.home, a);
      assert.deepEqual(sockets.host, [], sockets.seen);
      assert.ok(sockets.own.length >= 2, `A's own listeners, seen in its own namespace: ${sockets.seen}`);
    } finally {
      await exposed.stop();
    }
  });

  test("sessions run as host uids of their own: another session's uid cannot read its files; a session's processes are out of the other's sight", {
    skip: needsRoot,
  }, async () => {
    const [ua, ub] = [await hostUids(a), await hostUids(b)];
    assert.ok(ua.size >= 2 && ub.size >= 2, `${[...ua]} ${[...ub]}`);
    const passwd = new Set((await readFile('/etc/passwd', 'utf8')).split('\n').map((l) => Number(l.split(':')[2])));
    for (const uid of [...ua, ...ub]) {
      assert.ok(!passwd.has(uid), `uid ${uid} belongs to no one else on the host`);
      assert.ok(!ub.has(uid) || !ua.has(uid), `uid ${uid} is shared`);
    }

    await inA('echo secret-of-a > /home/kernel/secret.txt');
    const file = `${await diskOf(a)}/home/secret.txt`;
    const as = (uid: number) => execa('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', 'cat', file], { reject: false });
    // B's user, on the host: refused. Control: A's own user reads it.
    const userOf = (uids: Set<number>) => Math.max(...uids);
    assert.notEqual((await as(userOf(ub))).exitCode, 0);
    assert.equal((await as(userOf(ua))).stdout, 'secret-of-a');

    // Inside B: A's processes are not there to read or trace. Control: B reads its own.
    await d.api('POST', `/browsers/${a}/process/spawn`, { command: 'sh', args: ['-c', 'SECRET_OF_A=hush exec sleep 120'] });
    const bSees = await inB(
      'grep -l -s hush /proc/[0-9]*/environ; SECRET_OF_B=shh sleep 5 >/dev/null & sleep 0.2; grep -l -s shh /proc/[0-9]*/environ | grep -c environ',
    );
    assert.equal(bSees.out, '1\n', "A's processes are not in sight; B reads its own");
    const aSees = await inA('grep -l -s hush /proc/[0-9]*/environ');
    assert.match(aSees.out, /environ/, 'A reads its own');
  });

  test("a session sees the system read-only and not the host users' files", async () => {
    const planted = [`/root/rbrowse-planted-${process.pid}`, `/var/tmp/rbrowse-planted-${process.pid}`, join(d.home, 'planted')];
    for (const f of planted) await writeFile(f, 'host user data', { mode: 0o644 }).catch(() => {});
    try {
      const r = await inB(
        [
          ...planted.map((f) => `cat ${f} 2>/dev/null && echo "READ ${f}"`),
          'ls /home; ls /root 2>/dev/null | head -1',
          'touch /usr/bin/planted 2>/dev/null && echo WROTE-USR; touch /etc/planted 2>/dev/null && echo WROTE-ETC',
          'test -s /etc/ssl/certs/ca-certificates.crt && echo certs; fc-list | grep -c . ; test -x /usr/lib/chromium/chromium && echo chromium',
        ].join('\n'),
      );
      assert.doesNotMatch(r.out, /READ|WROTE|host user data/, r.out);
      const lines = r.out.trim().split('\n');
      assert.equal(lines[0], 'kernel', 'only its own home');
      // Control: the system's certificates, fonts and programs are there.
      assert.equal(lines.at(-3), 'certs');
      assert.ok(Number(lines.at(-2)) > 0, 'fonts');
      assert.equal(lines.at(-1), 'chromium');
    } finally {
      for (const f of planted) await rm(f, { force: true });
    }
  });

  test("a page reaches a server on the host's loopback as localhost, and the session's proxy holds the victim's password only inside", async () => {
    const server = await startFixtureServer();
    const browser = await chromium.connectOverCDP((await d.api('GET', `/browsers/${b}`, undefined, intruderKey)).body.cdp_ws_url);
    try {
      const page = browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage());
      const url = new URL(server.url);
      // A server started a moment ago changes the host's socket counts, which the daemon checks every second: it is there within one.
      const res = await waitFor(() => page.goto(`http://localhost:${url.port}/hello.html`).catch(() => undefined), 10_000, 'the page to load');
      assert.equal(res?.status(), 200);
    } finally {
      await browser.close();
      await server.close();
    }
    // A's proxy password is nowhere B or a local user can read: not in B, not in any command line on the host.
    const cmdlines = await execa('sh', ['-c', 'cat /proc/[0-9]*/cmdline | tr "\\0" " "'], { reject: false });
    assert.doesNotMatch(cmdlines.stdout, /proxy-password-of-the-victim/);
    assert.doesNotMatch(
      (await inB(LOOK_AROUND, { NEEDLE_1: 'proxy-password-of-the-victim', NEEDLE_2: 'proxy-password-of-the-victim' })).out.replace(
        /NEEDLE_\d=.*\n/g,
        '',
      ),
      /proxy-password/,
    );
  });
});

describe('limits of their own (line 8)', () => {
  test('a fork bomb, a memory hog, a full disk and a full /dev/shm in B: B gets errors, A and the daemon do not notice', async () => {
    // Memory: the hog is killed in B's group.
    const hog = await inB('/opt/rbrowse/bin/node -e "const a=[]; for(;;) a.push(Buffer.alloc(64<<20, 1))"; echo "exit $?"');
    assert.match(hog.out, /exit (137|134)/, hog.out + hog.err);
    assert.equal((await inB('echo still')).out, 'still\n', 'B itself goes on');

    // Disk and /dev/shm: full, for B only.
    const disk = await inB(
      'dd if=/dev/zero of=/home/kernel/big bs=1M count=100 2>&1 | grep -o "No space left"; rm -f /home/kernel/big; df -k /dev/shm | tail -1; dd if=/dev/zero of=/dev/shm/big bs=1M count=40 2>&1 | grep -o "No space left"; rm -f /dev/shm/big',
    );
    assert.match(disk.out, /No space left/);
    assert.equal(disk.out.match(/No space left/g)?.length, 2, disk.out);
    assert.match(disk.out, /\s32768\s/, 'a 32 MiB /dev/shm');
    assert.equal((await inA('dd if=/dev/zero of=/home/kernel/ok bs=1M count=16 2>/dev/null && echo wrote; rm -f /home/kernel/ok')).out, 'wrote\n');
    // Processes: B's limit, not the host's. Its sleeps hold B's tasks for a few seconds.
    const bomb = await inB('n=0; while [ $n -lt 600 ]; do sleep 6 >/dev/null 2>&1 & n=$((n+1)); done 2>/dev/null; jobs -p | wc -l');
    const started = Number(bomb.out.trim() || '0');
    assert.ok(bomb.err.includes('fork') || started < 400, `B started ${started} processes: ${bomb.err}`);
    assert.equal((await inA('echo fine')).out, 'fine\n', 'A starts processes during the bomb');
    assert.equal((await d.api('GET', '/health')).status, 200);
    await waitFor(async () => (await inB('echo back').catch(() => undefined))?.out === 'back\n', 30_000, 'B to start processes again');
    assert.equal((await d.api('GET', '/health')).status, 200);
    assert.equal((await d.api('GET', `/browsers/${b}`, undefined, intruderKey)).status, 200, 'B is still a session');

    // doctor says what it enforces, with these settings.
    const doctor = JSON.parse((await d.cli(['doctor', '--json'])).stdout) as { name: string; state: string; detail: string }[];
    const limit = (n: string) => doctor.find((c) => c.name === `limit ${n}`);
    assert.match(limit('pids')?.detail ?? '', /400/);
    assert.match(limit('shm')?.detail ?? '', /32 MiB/);
  });
});
