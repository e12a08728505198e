import type { FastifyReply } from 'fastify';
import { BadRequestError } from '../../../src/errors.js';
import type { SessionManager } from '../../sessions/manager.js';
import { EventStream } from '../../lib/sse.js';
import type { HandlerGroup } from '../handlers.js';
import { processesOf } from '../../in-session/process/session-processes.js';

/**
 * Aborts when the client hangs up before its answer: what it started ends rather than running on
 * unseen. (The response's own close event: a listener on a kept-alive socket would pile up.) A
 * client gone before this is asked (while its request waited for its turn) aborts it at once:
 * its response closed already, and no 'close' comes any more.
 */
export function clientGone(reply: Pick<FastifyReply, 'raw'>): AbortSignal {
  const aborted = new AbortController();
  const gone = () => {
    if (!reply.raw.writableFinished) aborted.abort();
  };
  if (reply.raw.destroyed) gone();
  else reply.raw.once('close', gone);
  return aborted.signal;
}

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
