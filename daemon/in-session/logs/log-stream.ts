import type { Readable } from 'node:stream';
import { execa } from 'execa';
import type { LogStreamQuery } from '../../../src/api/logs.js';
import { BadRequestError, NotFoundError } from '../../../src/errors.js';
import { killGroup } from '../../lib/procs.js';
import { sessionPath } from '../fs/paths.js';
import type { EventStream } from '../../lib/sse.js';
import { LineSplitter } from '../../lib/line-splitter.js';
import type { LiveSession } from '../../sessions/live-session.js';
import { processesOf } from '../process/session-processes.js';

/** The programs whose own logs `source=supervisor` reads (Kernel's VM names them after its supervisord programs). */
const PROGRAM_LOGS = ['chromium'] as const;

/** `follow`: from now on, as `tail -F` (a file replaced or emptied is followed on); otherwise the whole file. */
const reader = (file: string, follow: boolean) => (follow ? ['tail', '--lines=0', '--follow=name', '--retry', '--', file] : ['cat', '--', file]);

/**
 * GET /browsers/{id}/logs/stream: the lines of a file inside the session (read there, by a helper
 * in its box as its user, so a symlink means what it means to the browser), or of its Chromium's
 * own log (kept on the daemon's side, a file of the daemon's), as `log` events. The reader ends
 * with the stream, the stream with the reader (the file read, or the session ended).
 */
export async function streamLogs(session: LiveSession, query: LogStreamQuery, stream: EventStream): Promise<void> {
  const follow = query.follow ?? true;
  let reading: { stdout: Readable; done: Promise<unknown>; kill(): void };
  if (query.source === 'path') {
    if (!query.path) throw BadRequestError.field('path', 'is required when source is path');
    const path = sessionPath('path', query.path);
    const info = await session.files.info(path);
    if (info.is_dir) throw BadRequestError.field('path', `${path} is a directory`);
    const child = processesOf(session).helper(reader(path, follow));
    reading = { stdout: child.stdout!, done: child.exited, kill: () => child.kill('SIGKILL') };
  } else {
    const program = query.supervisor_process ?? '';
    if (!(PROGRAM_LOGS as readonly string[]).includes(program)) {
      throw new NotFoundError(`supervisor_process ${JSON.stringify(program)}: no such log here (there is: ${PROGRAM_LOGS.join(', ')})`);
    }
    const [command, ...args] = reader(session.dirs.chromiumLog, follow);
    const child = execa(command!, args, { reject: false, buffer: false, stdin: 'ignore', stderr: 'ignore', detached: true });
    reading = { stdout: child.stdout!, done: child, kill: () => killGroup(child.pid!, 'SIGKILL') };
  }
  const lines = new LineSplitter((message) => stream.send({ event: 'log', message, timestamp: new Date().toISOString() }));
  reading.stdout.on('data', (chunk: Buffer) => lines.write(chunk));
  void reading.done.finally(() => {
    lines.end();
    stream.end();
  });
  stream.onClose(() => reading.kill());
}
