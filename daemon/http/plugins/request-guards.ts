import fp from 'fastify-plugin';
import { ServiceUnavailableError } from '../../../src/errors.js';
import type { HostCheck } from '../front-door.js';

/**
 * Before anything else: when the request came, a stopping daemon's 503, and the Host check
 * (DNS rebinding). The request's caller fields start empty here; authenticate fills them.
 */
export const requestGuards = fp<{ hosts: HostCheck }>(async (app, opts) => {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (req) => {
    // Read now, not worked out at the answer from Date.now() less the elapsed time: onResponse
    // hooks may run long after the response's end on a busy loop, and the audit entry of a
    // request that made an export destination would then fall after the destination's start,
    // which would export it.
    req.receivedAt = Date.now();
    if (closing) throw new ServiceUnavailableError('the daemon is stopping');
    if (!opts.hosts.allows(req.headers.host)) throw opts.hosts.refusal(req.headers.host);
  });
  app.decorateRequest('org', null);
  app.decorateRequest('apiKey', null);
  app.decorateRequest('receivedAt', 0);
});
