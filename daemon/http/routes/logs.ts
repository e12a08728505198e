import { streamLogs } from '../../in-session/logs/log-stream.js';
import type { SessionManager } from '../../sessions/manager.js';
import type { HandlerGroup } from '../handlers.js';
import { EventStream } from '../../lib/sse.js';

export function logHandlers(sessions: SessionManager): HandlerGroup<'logsStream'> {
  return {
    logsStream: ({ org, params, query, reply }) =>
      sessions.withSession(org, params.id, async (s) => {
        return EventStream.serve(reply, async (stream) => {
          // A reader is a connected client: the session stays active while one follows its logs, and
          // its end ends the stream (a followed Chromium log is read by the daemon, not in the session).
          stream.onClose(s.hold('api', () => stream.end()));
          await streamLogs(s, query, stream);
        });
      }),
  };
}
