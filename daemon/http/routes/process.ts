import { BadRequestError } from '../../../src/errors.js';
import type { SessionManager } from '../../sessions/manager.js';
import { EventStream } from '../../lib/sse.js';
import type { HandlerGroup } from '../handlers.js';
import { processesOf } from '../../in-session/process/session-processes.js';
import { clientGone } from '../client-gone.js';

type ProcessOps = 'processExec' | 'processSpawn' | 'processStatus' | 'processStdin' | 'processKill' | 'processResize' | 'processStdoutStream';

/** Each operation runs in the caller's session (404 for another org's or an ended one). */
export function processHandlers(sessions: SessionManager): HandlerGroup<ProcessOps> {
  const inSession = sessions.withSession.bind(sessions);
  return {
    processExec: ({ org, params, body, reply }) => inSession(org, params.id, (s) => processesOf(s).exec(body, clientGone(reply))),
    processSpawn: ({ org, params, body }) => inSession(org, params.id, (s) => processesOf(s).spawn(body)),
    processStatus: ({ org, params }) => inSession(org, params.id, (s) => processesOf(s).get(params.process_id).status()),
    processStdin: ({ org, params, body }) =>
      inSession(org, params.id, async (s) => {
        const data = Buffer.from(body.data_b64, 'base64');
        if (data.toString('base64').replace(/=+$/, '') !== body.data_b64.replace(/=+$/, ''))
          throw BadRequestError.field('data_b64', 'is not valid base64');
        return { written_bytes: await processesOf(s).get(params.process_id).write(data) };
      }),
    processKill: ({ org, params, body }) =>
      inSession(org, params.id, async (s) => {
        await processesOf(s).get(params.process_id).signal(body.signal);
        return { ok: true };
      }),
    processResize: ({ org, params, body }) =>
      inSession(org, params.id, async (s) => {
        await processesOf(s).get(params.process_id).resize(body.rows, body.cols);
        return { ok: true };
      }),
    processStdoutStream: ({ org, params, reply }) =>
      inSession(org, params.id, async (s) => {
        const proc = processesOf(s).get(params.process_id);
        const stream = new EventStream();
        proc.subscribe(stream);
        return stream.open(reply);
      }),
  };
}
