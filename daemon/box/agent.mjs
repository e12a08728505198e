// The agent of one box: the first program in a session's (or an app's) namespaces, and the
// daemon's only way into them. It starts the box's programs (the browser, its display, the
// session's processes, the filesystem API's tools) as the box's user, connects to what listens
// inside (the browser's DevTools port, the VNC server's socket) and hands the connected sockets
// to the daemon over its IPC channel, and listens inside for connections the daemon serves (the
// session's proxy, the host's loopback services). Nothing inside listens for the daemon: every
// connection between them is a descriptor passed over this channel.
//
// It runs as the box's root (uid 0 inside, a host uid of its own) with only CAP_SETUID,
// CAP_SETGID, CAP_KILL, CAP_NET_BIND_SERVICE and CAP_DAC_READ_SEARCH, and those only in the box's
// user namespace (they reach no host file: host owners are not mapped there); the
// programs it starts run as the box's user (uid 1000 inside, another host uid), which can neither
// signal nor trace it. Plain Node, no packages: it starts before anything else is mounted.
import { spawn } from 'node:child_process';
import net from 'node:net';
import { readFile, readdir } from 'node:fs/promises';

/** The box's user, as the daemon mapped it (uid and gid 1000 inside). */
const USER = { uid: Number(process.env.RBROWSE_BOX_UID ?? 1000), gid: Number(process.env.RBROWSE_BOX_GID ?? 1000) };
/** Set when the box has one host uid only (a daemon that is not root): its programs run as the agent does, without capabilities. */
const SINGLE_UID = process.env.RBROWSE_BOX_SINGLE_UID === '1';
/** Drops every capability and privilege gain before a program runs (what a uid change does by itself otherwise). */
const DROP = ['/usr/bin/setpriv', '--inh-caps=-all', '--ambient-caps=-all', '--bounding-set=-all', '--no-new-privs', '--'];
/** What a program's output may have waiting in the daemon's direction before the agent stops reading it. */
const OUT_HIGH_WATER = 4 * 1024 * 1024;
/**
 * How long the browser may take to close by itself when the daemon is gone: a close is when it
 * writes its cookies, and on a loaded machine it took over 5 s (a profile then lost its cookies).
 */
const ORPHAN_CLOSE_MS = 15_000;

delete process.env.RBROWSE_BOX_UID;
delete process.env.RBROWSE_BOX_GID;
delete process.env.RBROWSE_BOX_SINGLE_UID;

const send = (message, handle) =>
  new Promise((resolve) => {
    if (!process.connected) return resolve(false);
    try {
      process.send(message, handle, {}, (err) => resolve(!err));
    } catch {
      resolve(false);
    }
  });

/** Programs started here, by the daemon's id. */
const children = new Map();
/** Listeners by the daemon's id; forwarded host ports by port. */
const listeners = new Map();
const forwards = new Map();
/** The browser's DevTools endpoint, for a graceful close when the daemon is gone. */
let browser;

function start(m) {
  const stdio = ['ignore', 'ignore', 'ignore'];
  if (m.stdin || m.input !== undefined) stdio[0] = 'pipe';
  if (m.stdout) stdio[1] = 'pipe';
  if (m.stderr) stdio[2] = 'pipe';
  for (const fd of m.extraFds ?? []) stdio[fd] = 'pipe';
  const asUser = m.user !== 'box';
  let file = m.file;
  let args = m.args ?? [];
  if (asUser && SINGLE_UID) [file, ...args] = [...DROP, file, ...args];
  let child;
  try {
    child = spawn(file, args, {
      cwd: m.cwd ?? '/',
      env: m.env ?? {},
      stdio,
      // Its own process group, so a signal reaches everything it started.
      detached: true,
      ...(asUser && !SINGLE_UID ? { uid: USER.uid, gid: USER.gid } : {}),
    });
  } catch (err) {
    void send({ op: 'error', id: m.id, message: err.message, code: err.code });
    return;
  }
  const entry = { child, role: m.role, credit: new Map() };
  children.set(m.id, entry);
  child.once('error', (err) => {
    children.delete(m.id);
    void send({ op: 'error', id: m.id, message: err.message, code: err.code });
  });
  child.once('spawn', () => void send({ op: 'spawned', id: m.id, pid: child.pid }));
  if (m.input !== undefined) child.stdin.end(Buffer.from(m.input));
  child.stdin?.on('error', () => {});
  const streams = [[1, child.stdout], [2, child.stderr], ...(m.extraFds ?? []).map((fd) => [fd, child.stdio[fd]])];
  for (const [fd, stream] of streams) {
    if (!stream) continue;
    let pending = 0;
    stream.on('data', (data) => {
      pending += data.length;
      void send({ op: 'data', id: m.id, fd, data }).then(() => {
        pending -= data.length;
        if (stream.isPaused() && pending < OUT_HIGH_WATER / 2 && !entry.held?.has(fd)) stream.resume();
      });
      if (pending > OUT_HIGH_WATER) stream.pause();
    });
    stream.once('close', () => void send({ op: 'eof', id: m.id, fd }));
    entry.credit.set(fd, stream);
  }
  // exit comes after every output stream's end, so the daemon has all of it first.
  child.once('close', (code, signal) => {
    children.delete(m.id);
    if (browser?.id === m.id) browser = undefined;
    void send({ op: 'exit', id: m.id, code, signal });
  });
}

function write(m) {
  const child = children.get(m.id)?.child;
  const stdin = child?.stdin;
  if (!stdin || stdin.destroyed) return void send({ op: 'written', id: m.id, bytes: m.data?.length ?? 0, end: Boolean(m.end), failed: true });
  if (m.end) {
    stdin.end(m.data ? Buffer.from(m.data) : undefined, () => void send({ op: 'written', id: m.id, end: true }));
    return;
  }
  stdin.write(Buffer.from(m.data), (err) => void send({ op: 'written', id: m.id, bytes: m.data.length, failed: Boolean(err) }));
}

/** Pauses or resumes reading one output of a program (the daemon's reader is behind). */
function hold(m) {
  const entry = children.get(m.id);
  const stream = entry?.credit.get(m.fd);
  if (!stream) return;
  entry.held ??= new Set();
  if (m.hold) {
    entry.held.add(m.fd);
    stream.pause();
  } else {
    entry.held.delete(m.fd);
    stream.resume();
  }
}

function signal(m) {
  const entry = children.get(m.id);
  if (!entry) return;
  try {
    // The whole group: detached children lead their own.
    process.kill(m.group === false ? entry.child.pid : -entry.child.pid, m.signal);
  } catch {
    // Already gone.
  }
}

/** A socket connected inside the box, handed over unread: the daemon is the first to read from it. */
function connect(m) {
  const socket = new net.Socket();
  socket.pause();
  const fail = (err) => void send({ op: 'error', id: m.id, message: err.message, code: err.code });
  socket.once('error', fail);
  socket.once('connect', () => {
    socket.off('error', fail);
    handOver({ op: 'socket', id: m.id }, socket);
  });
  if (m.unix) socket.connect(m.unix);
  else socket.connect(m.port, m.host ?? '127.0.0.1');
}

/** Sends a socket's descriptor to the daemon, then lets go of it here. */
function handOver(message, socket) {
  const handle = socket._handle;
  if (!handle) return void send({ op: 'error', id: message.id, message: 'the connection closed' });
  void send(message, handle).then(() => socket.destroy());
}

function listen(m) {
  const server = net.createServer({ pauseOnConnect: true }, (socket) => handOver({ op: 'accepted', id: m.id }, socket));
  server.once('error', (err) => void send({ op: 'error', id: m.id, message: err.message, code: err.code }));
  server.listen({ port: m.port, host: m.host ?? '127.0.0.1', exclusive: true }, () => {
    listeners.set(m.id, server);
    void send({ op: 'listening', id: m.id, port: server.address().port });
  });
}

/**
 * The host's loopback services inside: for each port the daemon names, a listener on 127.0.0.1 and
 * ::1 here whose connections go to the daemon, which connects them to the same port on the host.
 * A port something in the box listens on already is left to it.
 */
function forward(m) {
  const wanted = new Set(m.ports);
  for (const [port, servers] of forwards) {
    if (wanted.has(port)) continue;
    for (const s of servers) s.close();
    forwards.delete(port);
  }
  for (const port of wanted) {
    if (forwards.has(port)) continue;
    const servers = [];
    forwards.set(port, servers);
    for (const host of ['127.0.0.1', '::1']) {
      const server = net.createServer({ pauseOnConnect: true }, (socket) =>
        handOver({ op: 'forwarded', port, family: host === '::1' ? 6 : 4 }, socket),
      );
      server.on('error', () => server.close());
      server.listen({ port, host, exclusive: true });
      servers.push(server);
    }
  }
}

/** CPU seconds and resident bytes of a program and everything below it, read here where its pids mean something. */
async function usage(m) {
  const root = children.get(m.proc)?.child.pid;
  let cpu = 0;
  let rss = 0;
  if (root) {
    const parents = new Map();
    const stats = new Map();
    for (const name of await readdir('/proc').catch(() => [])) {
      const pid = Number(name);
      if (!Number.isInteger(pid)) continue;
      const stat = await readFile(`/proc/${pid}/stat`, 'latin1').catch(() => '');
      if (!stat) continue;
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parents.set(pid, Number(f[1]));
      stats.set(pid, f);
    }
    const within = (pid) => {
      for (let p = pid, hops = 0; p && hops < 64; p = parents.get(p), hops++) if (p === root) return true;
      return false;
    };
    for (const [pid, f] of stats) {
      if (!within(pid)) continue;
      cpu += (Number(f[11]) + Number(f[12])) / 100;
      rss += Number(f[21]) * 4096;
    }
  }
  void send({ op: 'usage', id: m.id, cpu_seconds: cpu, rss_bytes: rss });
}

function killEverything() {
  // -1: every process this one may signal (CAP_KILL: the whole box but its init and itself).
  try {
    process.kill(-1, 'SIGKILL');
  } catch {
    // Nothing left.
  }
}

/**
 * The daemon is gone (crashed, killed): the browser closes as on a normal end, so its profile's
 * cookies and storage are on disk for the next daemon to save, then the box ends.
 */
let orphaning;
function orphaned() {
  // Told by the launcher, then its channel closes: once.
  orphaning ??= closeOrphaned();
  return orphaning;
}

async function closeOrphaned() {
  // Nobody reads the programs' output any more: a stream left held (the daemon's reader was behind
  // when it died) would block the browser on its next write to stderr, and a browser blocked
  // there never finishes closing.
  for (const entry of children.values()) {
    entry.held?.clear();
    for (const stream of entry.credit.values()) stream.resume();
  }
  const b = browser;
  const child = b && children.get(b.id)?.child;
  if (child) {
    await new Promise((resolve) => {
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(finish, ORPHAN_CLOSE_MS);
      // Its pipes' close: every process of the browser gone, the network service (which writes the
      // cookies) among them. Past the browser process's own exit a helper may still hold a pipe
      // open: then a moment more, not the whole wait.
      child.once('close', finish);
      if (child.exitCode !== null || child.signalCode !== null) setTimeout(finish, 2000);
      else child.once('exit', () => setTimeout(finish, 2000));
      // Browser.close until one is sent: a connection refused once (a busy machine) is tried again.
      const close = () => {
        if (done) return;
        let sent = false;
        try {
          const ws = new WebSocket(`ws://127.0.0.1:${b.port}${b.path}`);
          ws.onopen = () => {
            sent = true;
            ws.send(JSON.stringify({ id: 1, method: 'Browser.close' }));
          };
          ws.onclose = () => sent || setTimeout(close, 250);
          ws.onerror = () => {};
        } catch {
          setTimeout(close, 250);
        }
      };
      close();
    });
  }
  killEverything();
  process.exit(0);
}

process.on('disconnect', () => void orphaned());
process.on('message', (m) => {
  try {
    handle(m);
  } catch (err) {
    // A bad request fails alone; the agent, and so the box, goes on.
    if (m?.id) void send({ op: 'error', id: m.id, message: err.message, code: err.code });
  }
});

function handle(m) {
  switch (m?.op) {
    case 'spawn':
      return start(m);
    case 'write':
      return write(m);
    case 'hold':
      return hold(m);
    case 'signal':
      return signal(m);
    case 'connect':
      return connect(m);
    case 'listen':
      return listen(m);
    case 'unlisten':
      listeners.get(m.id)?.close();
      listeners.delete(m.id);
      return;
    case 'forward':
      return forward(m);
    case 'usage':
      return void usage(m);
    case 'browser':
      browser = { id: m.id, port: m.port, path: m.path };
      return;
    case 'orphaned':
      return void orphaned();
    case 'shutdown':
      killEverything();
      process.exit(0);
  }
}
void send({ op: 'ready' });
