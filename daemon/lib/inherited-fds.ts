import { readdirSync, readFileSync } from 'node:fs';

/** O_CLOEXEC as /proc/<pid>/fdinfo prints a descriptor's flags (octal). */
const O_CLOEXEC = 0o2000000;
/** Set in the environment of the program started afresh without the descriptors, so it never loops. */
const CLOSED_MARK = 'RBROWSE_INHERITED_FDS_CLOSED';

/**
 * Descriptors above 2 this process inherited open across exec: whoever started it left them open
 * (a shell's redirection, a supervisor's socket), and every program started from here would have
 * them too, down to a session's own. Node opens all of its own with close-on-exec.
 */
export function inheritedFds(): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc/self/fd')) {
    const fd = Number(name);
    if (!(fd > 2)) continue;
    let flags: string | undefined;
    try {
      flags = /^flags:\s*([0-7]+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))?.[1];
    } catch {
      // The directory's own descriptor, closed already.
      continue;
    }
    if (flags !== undefined && (Number.parseInt(flags, 8) & O_CLOEXEC) === 0) out.push(fd);
  }
  return out;
}

/**
 * Starts this very program afresh with none of them: bash closes each and execs it again (Node
 * cannot close a descriptor it did not open, nor has it close_range). Returns only when there was
 * nothing to close, or when they are still there after the restart (then the caller says so).
 */
export function closeInheritedFds(log: (msg: string, extra?: object) => void): void {
  const fds = inheritedFds();
  if (fds.length === 0) {
    delete process.env[CLOSED_MARK];
    return;
  }
  if (process.env[CLOSED_MARK]) {
    log('descriptors inherited from the daemon’s starter are still open', { fds });
    return;
  }
  const script = `for fd in ${fds.join(' ')}; do eval "exec $fd>&-"; done; exec "$@"`;
  process.execve!('/bin/bash', ['bash', '-c', script, 'rbrowse', process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
    ...process.env,
    [CLOSED_MARK]: '1',
  });
}
