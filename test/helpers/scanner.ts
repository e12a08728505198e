import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { findMarkedProcesses, killGroup, parentOf } from '../../daemon/lib/procs.js';
import { waitFor } from './daemon.js';

/** What an attacker's scan found reachable: DevTools endpoints, VNC servers, X displays that let it in. */
export interface Reach {
  devtools: number[];
  rfb: number[];
  /** X sockets (abstract `@/tmp/...` or files) that accepted a connection without authorization. */
  x: string[];
  /** Every listening TCP port it tried. */
  ports: number[];
}

/**
 * The attacker's scan, as a plain Node script (no import of ours): every TCP port listening on
 * a loopback or wildcard address in its network namespace is asked for a VNC greeting and for
 * DevTools' /json/version; every X socket it can name (abstract ones in /proc/net/unix, files in
 * /tmp/.X11-unix) is sent an X connection set-up without authorization. Prints a Reach.
 */
export const SCAN_SCRIPT = `
const net = require('node:net');
const fs = require('node:fs');
const LOCAL = new Set(['0100007F', '00000000', '00000000000000000000000001000000', '00000000000000000000000000000000']);
const ports = new Set();
for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
  for (const line of (fs.existsSync(f) ? fs.readFileSync(f, 'latin1') : '').split('\\n').slice(1)) {
    const c = line.trim().split(/\\s+/);
    if (c[3] !== '0A' || !c[1]) continue;
    const [addr, port] = c[1].split(':');
    if (LOCAL.has(addr)) ports.add(parseInt(port, 16));
  }
}
function talk(target, first, ms) {
  return new Promise((resolve) => {
    let got = Buffer.alloc(0), sent = false;
    const s = net.connect(target);
    const done = () => { s.destroy(); resolve(got); };
    const timer = setTimeout(done, ms);
    s.on('error', () => { clearTimeout(timer); done(); });
    s.on('close', () => { clearTimeout(timer); done(); });
    s.on('data', (b) => { got = Buffer.concat([got, b]); if (got.length > 4096) { clearTimeout(timer); done(); } });
    s.on('connect', () => { if (first.greet) setTimeout(() => { if (!got.length) { sent = true; s.write(first.data); } }, first.greet); else s.write(first.data); });
  });
}
(async () => {
  const out = { devtools: [], rfb: [], x: [], ports: [...ports].sort((a, b) => a - b) };
  await Promise.all(out.ports.map(async (port) => {
    const got = (await talk({ host: '127.0.0.1', port }, { greet: 300, data: 'GET /json/version HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n' }, 2000)).toString('latin1');
    if (got.startsWith('RFB ')) out.rfb.push(port);
    else if (got.includes('webSocketDebuggerUrl')) out.devtools.push(port);
  }));
  const names = new Set();
  for (const line of fs.readFileSync('/proc/net/unix', 'latin1').split('\\n').slice(1)) {
    const path = line.trim().split(/\\s+/)[7];
    if (path && /^@.*\\.X11-unix\\/X\\d+$/.test(path)) names.add(path);
  }
  for (const f of fs.existsSync('/tmp/.X11-unix') ? fs.readdirSync('/tmp/.X11-unix') : []) names.add('/tmp/.X11-unix/' + f);
  const setup = Buffer.from([0x6c, 0, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
  for (const name of names) {
    const got = await talk({ path: name.startsWith('@') ? '\\0' + name.slice(1) : name }, { data: setup }, 2000);
    if (got[0] === 1) out.x.push(name);
  }
  out.devtools.sort((a, b) => a - b);
  out.rfb.sort((a, b) => a - b);
  process.stdout.write(JSON.stringify(out));
})();
`;

const root = process.getuid?.() === 0;

/** The scan run on the host as another local user (nobody), holding nothing. */
export async function scanAsLocalUser(): Promise<Reach> {
  const dir = await mkdtemp(join(tmpdir(), 'rbrowse-scan-'));
  try {
    await chmod(dir, 0o755);
    await writeFile(join(dir, 'scan.cjs'), SCAN_SCRIPT, { mode: 0o644 });
    const argv = [...(root ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : []), process.execPath, join(dir, 'scan.cjs')];
    const r = await execa(argv[0]!, argv.slice(1), { reject: false, timeout: 60_000 });
    if (r.exitCode !== 0) throw new Error(`the scan failed: ${r.stderr}`);
    return JSON.parse(r.stdout) as Reach;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

/**
 * The control: what the attack finds where nothing isolates it. A raw Chromium with a DevTools
 * port, an Xvfb without authorization and an x11vnc on a loopback port, started on the host as
 * anyone would start them.
 */
export async function startExposedTargets(): Promise<{ devtools: number; rfb: number; display: number; stop(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'rbrowse-exposed-'));
  const started: number[] = [];
  const stop = async () => {
    for (const pid of started) killGroup(pid, 'SIGKILL');
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const chromium = spawn(
      '/usr/lib/chromium/chromium',
      ['--headless', '--no-sandbox', '--remote-debugging-port=0', `--user-data-dir=${dir}/profile`, '--no-first-run', 'about:blank'],
      { stdio: ['ignore', 'ignore', 'pipe'], detached: true },
    );
    started.push(chromium.pid!);
    let err = '';
    chromium.stderr!.on('data', (b: Buffer) => (err += b));
    const devtools = (await waitFor(
      () => Number(/DevTools listening on ws:\/\/127\.0\.0\.1:(\d+)/.exec(err)?.[1]) || undefined,
      30_000,
      'the raw Chromium',
    ))!;

    const xvfb = spawn('Xvfb', ['-displayfd', '3', '-screen', '0', '640x480x24', '-nolisten', 'tcp'], {
      stdio: ['ignore', 'ignore', 'ignore', 'pipe'],
      detached: true,
    });
    started.push(xvfb.pid!);
    let fd = '';
    (xvfb.stdio[3] as NodeJS.ReadableStream).on('data', (b: Buffer) => (fd += b));
    // (waitFor wants a truthy answer: display 0 is one)
    const display = (await waitFor(() => /^(\d+)\n/.exec(fd)?.[1], 30_000, 'the raw Xvfb'))!;

    const rfb = await freePort();
    const vnc = spawn('x11vnc', ['-display', `:${display}`, '-rfbport', String(rfb), '-localhost', '-nopw', '-forever', '-quiet'], {
      stdio: 'ignore',
      detached: true,
    });
    started.push(vnc.pid!);
    return { devtools, rfb, display: Number(display), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Socket inodes of this network namespace: TCP listeners by port, Unix sockets by path (`@` for abstract ones). */
async function socketInodes(): Promise<{ tcp: Map<number, string[]>; unix: Map<string, string[]> }> {
  const tcp = new Map<number, string[]>();
  const unix = new Map<string, string[]>();
  const add = <K>(m: Map<K, string[]>, k: K, inode: string) => m.set(k, [...(m.get(k) ?? []), inode]);
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of (await readFile(file, 'utf8').catch(() => '')).split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // st 0A = LISTEN
      if (f[3] === '0A') add(tcp, Number.parseInt(f[1]!.split(':')[1]!, 16), f[9]!);
    }
  }
  for (const line of (await readFile('/proc/net/unix', 'utf8')).split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[7]) add(unix, f[7], f[6]!);
  }
  return { tcp, unix };
}

/** The pids holding any of these socket inodes. */
async function holders(inodes: string[]): Promise<number[]> {
  const wanted = new Set(inodes.map((i) => `socket:[${i}]`));
  const pids: number[] = [];
  for (const pid of (await readdir('/proc')).filter((p) => /^\d+$/.test(p))) {
    const fds = await readdir(`/proc/${pid}/fd`).catch(() => [] as string[]);
    for (const fd of fds) {
      if (wanted.has(await readlink(`/proc/${pid}/fd/${fd}`).catch(() => ''))) {
        pids.push(Number(pid));
        break;
      }
    }
  }
  return pids;
}

async function descendsFrom(pid: number, ancestors: Set<number>): Promise<boolean> {
  for (let p = pid; p > 1; ) {
    if (ancestors.has(p)) return true;
    const stat = await readFile(`/proc/${p}/stat`, 'utf8').catch(() => '');
    if (!stat) return false;
    p = parentOf(stat);
  }
  return false;
}

/**
 * What of a scan's reach is served by a daemon's sessions (by the processes that hold the sockets
 * reached, and their ancestors' home markers): the attack must reach none. Endpoints of anything
 * else on the machine (a desktop's X server, a developer's own Chromium) are the host's, not a
 * session's, and are left out.
 */
export async function reachedSessions(home: string, reach: Reach): Promise<string[]> {
  const marked = new Set(await findMarkedProcesses(home));
  const { tcp, unix } = await socketInodes();
  const endpoints: [string, string[]][] = [
    ...reach.devtools.map((p): [string, string[]] => [`devtools :${p}`, tcp.get(p) ?? []]),
    ...reach.rfb.map((p): [string, string[]] => [`rfb :${p}`, tcp.get(p) ?? []]),
    ...reach.x.map((name): [string, string[]] => [`x ${name}`, unix.get(name) ?? []]),
  ];
  const found: string[] = [];
  for (const [name, inodes] of endpoints) {
    for (const pid of await holders(inodes)) if (await descendsFrom(pid, marked)) found.push(`${name} (pid ${pid})`);
  }
  return found;
}
