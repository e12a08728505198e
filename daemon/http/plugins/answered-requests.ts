import fp from 'fastify-plugin';
import type { OperationId } from '../../../src/api/routes.js';
import type { AnsweredRequest } from '../../org/audit/answered-request.js';

/** Reports each answered request an organization made (not admin, jwt or public ones): audit and telemetry. */
export const answeredRequests = fp<{ answered: (r: AnsweredRequest) => void }>(async (app, opts) => {
  const answered = opts.answered;
  app.addHook('onResponse', async (req, reply) => {
    const operationId = (req.routeOptions.schema as { operationId?: OperationId } | undefined)?.operationId;
    if (!req.org || !req.apiKey || !operationId) return;
    answered({
      operationId,
      url: req.routeOptions.url ?? '',
      params: (req.params ?? {}) as Record<string, string>,
      org: req.org,
      key: req.apiKey,
      method: req.method,
      path: req.url.split('?')[0]!,
      receivedAt: req.receivedAt,
      clientIp: req.ip,
      userAgent: req.headers['user-agent'] ?? '',
      host: req.headers.host ?? '',
      status: reply.statusCode,
      durationMs: Math.round(reply.elapsedTime),
      requestId: String(req.id),
    });
  });
});
