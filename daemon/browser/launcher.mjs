// The daemon's process launcher: a small Node process that forks the sessions' browsers, displays
// and VNC servers on the daemon's behalf.
// libuv's spawn() waits, on the calling event loop, until the new child has exec'd; when the two
// cores are busy starting browsers that wait is 5 ms typically and up to 140 ms, and every API
// request waits with it. Here the wait stalls nobody. Each child runs detached (its own process
// group, which the daemon signals directly); its output and exit come back as IPC messages.
// The daemon gone (its IPC channel closed) ends this process; the children stay for the daemon's
// next start to reap, as they would if the daemon had forked them itself.
import { spawn } from 'node:child_process';

const send = (message) => {
  if (process.connected) process.send(message);
};

process.on('disconnect', () => process.exit(0));
process.on('message', ({ id, command, args, env, pipes }) => {
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
});
