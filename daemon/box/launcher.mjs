// The daemon's process launcher: a small Node process that forks on the daemon's behalf, so no
// fork waits on the daemon's event loop (libuv's spawn() waits there until the child has exec'd:
// 5 ms typically, up to 140 ms on two busy cores, with every API request waiting behind it).
//
// It starts two kinds of things:
//  - plain children (`spawn`): their output and exit come back as IPC messages;
//  - boxes (`box-start`): a session's or an app's namespaces under bubblewrap, with the agent
//    (daemon/box/agent.mjs) as their first program. The launcher writes the box's uid and gid
//    maps while bubblewrap waits for them, puts it in its cgroups, mounts its disk, starts its
//    network (pasta) and relays the agent's messages, and the descriptors they carry, both ways.
//
// The daemon gone (its IPC channel closed): every box's agent is told, so its browser closes as
// on a normal end, the boxes are given a few seconds to end, then whatever is left is killed and
// this process exits.
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, chownSync, chmodSync, openSync, writeFileSync } from 'node:fs';

/**
 * How long the boxes get to end once the daemon is gone: longer than an agent gives its browser
 * to close (ORPHAN_CLOSE_MS in agent.mjs, 15 s: a close writes the cookies), shorter than a
 * restarted daemon waits for this process (LAUNCHER_GRACE_MS in daemon/sessions/reaper.ts,
 * 20 s). At 7 s a browser still closing on a loaded machine was killed, and a profile saved
 * from it lost its cookies.
 */
const ORPHAN_GRACE_MS = 17_000;

const send = (message, handle) => {
  if (!process.connected) return;
  try {
    if (handle) process.send(message, handle, {}, () => handle.close?.());
    else process.send(message);
  } catch {
    // The daemon is gone; 'disconnect' follows.
  }
};

function plain({ id, command, args, env, pipes }) {
  // pipes: the descriptors the daemon reads (2: stderr, 1: stdout, 3...: more); the rest are ignored.
  const stdio = Array.from({ length: Math.max(3, ...pipes.map((fd) => fd + 1)) }, (_, fd) => (pipes.includes(fd) ? 'pipe' : 'ignore'));
  let child;
  try {
    child = spawn(command, args, { env, detached: true, stdio });
  } catch (err) {
    send({ id, type: 'error', message: err.message, code: err.code });
    return;
  }
  child.once('error', (err) => send({ id, type: 'error', message: err.message, code: err.code }));
  child.once('spawn', () => send({ id, type: 'spawned', pid: child.pid }));
  for (const fd of pipes) {
    child.stdio[fd].on('data', (data) => send({ id, type: 'data', fd, data }));
    child.stdio[fd].once('close', () => send({ id, type: 'closed', fd }));
  }
  child.once('exit', (code, signal) => send({ id, type: 'exit', code, signal }));
}

/** Runs a short command to its end; rejects with its stderr when it fails. */
function run(command, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')}: ${stderr.trim() || `exit ${code}`}`))));
  });
}

/** Boxes by the daemon's id: { child, pasta, disk, stopping }. */
const boxes = new Map();

/**
 * A box's disk: a tmpfs of its own size on the host (so it outlives a crashed daemon for the next
 * one to save a profile from), with the directories the box binds, made and owned here, by root,
 * while nothing of the box exists yet.
 */
async function mountDisk(disk) {
  mkdirSync(disk.dir, { recursive: true, mode: 0o700 });
  // The root is its user's and the boxes' group's alone (uids.ts): no other local user reaches a disk.
  await run('mount', ['-t', 'tmpfs', '-o', `size=${disk.bytes},mode=0710,nosuid,nodev,uid=${disk.uid},gid=${disk.rootGid}`, 'tmpfs', disk.dir]);
  for (const { path, mode } of disk.layout) {
    const full = `${disk.dir}/${path}`;
    mkdirSync(full, { recursive: true });
    chownSync(full, disk.uid, disk.gid);
    chmodSync(full, mode);
  }
}

function openPaths(paths) {
  return paths.map((p) => openSync(p, 'r'));
}

async function startBox(m) {
  const { box: id, spec } = m;
  const entry = { stopping: false, disk: spec.disk };
  boxes.set(id, entry);
  const fail = (err) => {
    send({ type: 'box-error', box: id, message: err.message });
    void stopBox({ box: id, keepDisk: false }, true);
  };
  let fds = [];
  try {
    if (spec.disk?.mount) await mountDisk(spec.disk);
    // Host paths the box binds are opened here and handed over as descriptors: bubblewrap, run as
    // the box's own uid, could not look them up below the daemon's home (0700), and the box sees
    // none of their names.
    fds = openPaths(spec.bindFds);
  } catch (err) {
    return fail(err);
  }
  // 0-2 stdio, 3 the agent's IPC channel, 4 userns-block, 5 info, 6 args, 7.. data files, then the bind descriptors.
  const stdio = ['ignore', 'ignore', 'pipe', 'ipc', 'pipe', 'pipe', 'pipe', ...spec.files.map(() => 'pipe'), ...fds];
  let child;
  try {
    child = spawn(spec.argv[0], spec.argv.slice(1), { env: spec.env, stdio, serialization: 'advanced', detached: true });
  } catch (err) {
    for (const fd of fds) closeSync(fd);
    return fail(err);
  }
  for (const fd of fds) closeSync(fd);
  entry.child = child;
  child.once('error', fail);
  // bubblewrap closes these as it goes: a reset then is no error of ours.
  for (const stream of child.stdio.slice(4)) stream?.on('error', () => {});
  child.stderr.on('error', () => {});
  child.stdio[6].end(spec.bwrapArgs.map((a) => `${a}\0`).join(''));
  for (const [i, content] of spec.files.entries()) child.stdio[7 + i].end(content);
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr = (stderr + d).slice(-4000);
    send({ type: 'box-stderr', box: id, data: d });
  });
  let info = '';
  child.stdio[5].on('data', (d) => {
    info += d;
    if (!/}\s*$/.test(info)) return;
    void userNamespaceReady(id, entry, spec, JSON.parse(info)['child-pid'], child).catch((err) => fail(err));
  });
  child.on('message', (msg, handle) => {
    // The agent's first word: bubblewrap has set the box up (its loopback among it) and run it.
    entry.startNetwork?.();
    entry.startNetwork = undefined;
    send({ type: 'box-msg', box: id, msg }, handle);
  });
  child.once('exit', (code, signal) => {
    entry.exited = true;
    if (!entry.stopping) send({ type: 'box-exit', box: id, code, signal, stderr: stderr.slice(-2000) });
    entry.pasta?.kill('SIGKILL');
  });
}

/** Bubblewrap waits on fd 4 until the box's user namespace has its maps: written here, as root. */
async function userNamespaceReady(id, entry, spec, pid, child) {
  for (const procs of spec.cgroupProcs ?? []) writeFileSync(procs, String(pid));
  if (spec.uidMap) {
    writeFileSync(`/proc/${pid}/uid_map`, spec.uidMap);
    if (spec.denySetgroups) writeFileSync(`/proc/${pid}/setgroups`, 'deny');
    writeFileSync(`/proc/${pid}/gid_map`, spec.gidMap);
  }
  child.stdio[4].end('1');
  send({ type: 'box-started', box: id, pid: child.pid, childPid: pid });
  // pasta starts once the agent runs, not now: bringing the box's loopback up itself, it raced
  // bubblewrap's own setup of it (which then failed, 'loopback: Failed RTM_NEWADDR').
  if (spec.pasta) entry.startNetwork = () => startNetwork(id, entry, spec, pid);
}

/** pasta for the box's outbound traffic, in its network namespace (by the pid of its init). */
function startNetwork(id, entry, spec, pid) {
  if (entry.exited || entry.stopping) return;
  const pasta = spawn(spec.pasta.command, [...spec.pasta.args, String(pid)], { env: spec.env, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  entry.pasta = pasta;
  let out = '';
  pasta.stderr.on('data', (d) => (out = (out + d).slice(-2000)));
  pasta.once('error', (err) => send({ type: 'box-network', box: id, ok: false, message: err.message }));
  // pasta -f stays in the foreground: its exit before the box's is a network that failed to start.
  pasta.once('exit', (code) => {
    if (!entry.exited && !entry.stopping) send({ type: 'box-network', box: id, ok: false, message: out.trim() || `pasta exited with ${code}` });
  });
  send({ type: 'box-network', box: id, ok: true, pid: pasta.pid });
}

async function stopBox({ box: id, keepDisk }, quiet = false) {
  const entry = boxes.get(id);
  if (!entry) return void (quiet || send({ type: 'box-stopped', box: id }));
  entry.stopping = true;
  const child = entry.child;
  if (child && !entry.exited) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    // bubblewrap's monitor dies, and with it (--die-with-parent) the box's init and so every process inside.
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
    await exited;
  }
  entry.pasta?.kill('SIGKILL');
  if (entry.disk?.mount && !keepDisk) await run('umount', ['--lazy', entry.disk.dir]).catch(() => {});
  boxes.delete(id);
  if (!quiet) send({ type: 'box-stopped', box: id });
}

async function orphaned() {
  for (const entry of boxes.values()) {
    try {
      entry.child?.send({ op: 'orphaned' });
    } catch {
      // Its agent is gone.
    }
  }
  const all = [...boxes.values()].filter((e) => e.child && !e.exited).map((e) => new Promise((r) => e.child.once('exit', r)));
  await Promise.race([Promise.all(all), new Promise((r) => setTimeout(r, ORPHAN_GRACE_MS))]);
  // The disks stay mounted: the next daemon saves what they hold, then unmounts them.
  await Promise.all([...boxes.keys()].map((box) => stopBox({ box, keepDisk: true }, true)));
  process.exit(0);
}

process.on('disconnect', () => void orphaned());
process.on('message', (m, handle) => {
  switch (m.type) {
    case undefined:
    case 'spawn':
      return plain(m);
    case 'box-start':
      return void startBox(m);
    case 'box-send': {
      const child = boxes.get(m.box)?.child;
      if (!child?.connected) return;
      try {
        child.send(m.msg, handle, {}, () => handle?.close?.());
      } catch {
        // The box is ending; its exit says so.
      }
      return;
    }
    case 'box-stop':
      return void stopBox(m);
  }
});
