import { readdir, readFile } from 'node:fs/promises';
import { isAlive, signal, sleep } from '../../src/pids.js';

// Also the CLI's (it watches the daemon's pid), hence in src/.
export { isAlive, signal, sleep };

/** Environment markers every process rbrowse starts carries, so it can be found again from /proc alone. */
export const HOME_MARK = 'RBROWSE_HOME';
export const SESSION_MARK = 'RBROWSE_SESSION';

export function markedEnv(home: string, sessionId: string): Record<string, string> {
  return { [HOME_MARK]: home, [SESSION_MARK]: sessionId };
}

/**
 * Pids of processes started for this home (and, if given, this session), found by their
 * environment, plus all their descendants: Chromium's zygote and renderers overwrite the memory
 * /proc shows as their environment with their process titles, so only the ancestor carries a
 * readable marker. This also finds helpers that left the process group, such as Chromium's
 * crashpad handler, and processes a crashed daemon never got to record.
 */
export async function findMarkedProcesses(home: string, sessionId?: string): Promise<number[]> {
  const wantHome = `${HOME_MARK}=${home}`;
  const wantSession = sessionId ? `${SESSION_MARK}=${sessionId}` : `${SESSION_MARK}=`;
  const entries = await readdir('/proc').catch(() => [] as string[]);
  const marked = new Set<number>();
  const children = new Map<number, number[]>();
  await Promise.all(
    entries.map(async (name) => {
      const pid = Number(name);
      if (!Number.isInteger(pid) || pid === process.pid) return;
      const stat = await readFile(`/proc/${pid}/stat`, 'latin1').catch(() => '');
      const ppid = parentOf(stat);
      if (ppid) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
      const environ = await readFile(`/proc/${pid}/environ`, 'latin1').catch(() => '');
      if (!environ) return;
      const vars = environ.split('\0');
      if (!vars.includes(wantHome)) return;
      if (sessionId ? vars.includes(wantSession) : vars.some((v) => v.startsWith(wantSession))) marked.add(pid);
    }),
  );
  const found = new Set<number>();
  const visit = (pid: number) => {
    if (found.has(pid)) return;
    found.add(pid);
    for (const child of children.get(pid) ?? []) visit(child);
  };
  for (const pid of marked) visit(pid);
  return [...found];
}

/** The fields of /proc/PID/stat after the command (which may hold spaces and parentheses): [0] is the state, field 3. */
export const statFields = (stat: string): string[] => stat.slice(stat.lastIndexOf(')') + 2).split(' ');

/** The parent pid in the text of /proc/PID/stat. */
export const parentOf = (stat: string): number => Number(statFields(stat)[1]);

/** Kills a process group (the leader may already be gone while members remain). */
export const killGroup = (pgid: number, sig: NodeJS.Signals = 'SIGKILL'): boolean => signal(-pgid, sig);

/** Waits until every pid has exited; SIGKILL is asynchronous, and a dying browser still holds its files. */
export async function waitGone(pids: number[], timeoutMs = 5000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!pids.some(isAlive)) return true;
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
}

/** Kills every marked process of the home (or one session) and waits until they are gone. */
export async function killMarked(home: string, sessionId?: string): Promise<number[]> {
  const pids = await findMarkedProcesses(home, sessionId);
  for (const pid of pids) signal(pid, 'SIGKILL');
  if (pids.length) await waitGone(pids);
  return pids;
}

/** Resolves true once the promise settles within ms, false on time-out. */
export async function within(ms: number, p: Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
  try {
    return await Promise.race([p.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
