import type { FastifyReply } from 'fastify';

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
