import type { FastifyReply, FastifyRequest } from 'fastify';
import { NotFoundError } from '../../../src/errors.js';
import { sendPage } from '../../lib/paging.js';
import type { SessionManager } from '../../sessions/manager.js';
import type { Telemetry } from '../../features/telemetry/telemetry.js';
import type { TelemetryDestinations } from '../../features/telemetry/destinations.js';
import type { HandlerGroup } from '../handlers.js';

export function telemetryHandlers(
  sessions: SessionManager,
  telemetry: Telemetry,
): HandlerGroup<'telemetryEvents' | 'telemetryStream' | 'sessionTelemetryStream'> {
  /** The stream of a running session: after Last-Event-ID if sent, else from the oldest kept with replay=all, else new events. */
  const stream = (sessionId: string, query: { replay?: string }, request: FastifyRequest, reply: FastifyReply) => {
    const lastId = Number(request.headers['last-event-id']);
    const resume = request.headers['last-event-id'] !== undefined && Number.isInteger(lastId) && lastId >= 0;
    return telemetry.stream(sessionId, { afterSeq: resume ? lastId : undefined, all: query.replay === 'all' }).open(reply);
  };
  return {
    // An ended session's events are read from the archive; another org's session is a 404.
    telemetryEvents: async ({ org, params, query, reply }) => {
      const session = await sessions.get(org, params.id, true);
      return sendPage(reply, await telemetry.events(session.session_id, query));
    },
    telemetryStream: async ({ org, params, query, request, reply }) => {
      const session = await sessions.get(org, params.id);
      if (!sessions.liveSession(session.session_id)) throw new NotFoundError(`browser session ${params.id} has ended`);
      return stream(session.session_id, query, request, reply);
    },
    // The official SDK sends the stream to the session's base_url with its jwt, as to a Kernel VM.
    sessionTelemetryStream: async ({ query, request, reply }) => stream((await sessions.sessionForToken(query.jwt, 'cdp')).id, query, request, reply),
  };
}

export function telemetryDestinationHandlers(
  destinations: TelemetryDestinations,
): HandlerGroup<
  'createTelemetryDestination' | 'listTelemetryDestinations' | 'getTelemetryDestination' | 'updateTelemetryDestination' | 'deleteTelemetryDestination'
> {
  return {
    createTelemetryDestination: ({ org, body }) => destinations.create(org, body),
    listTelemetryDestinations: ({ org, query, reply }) => sendPage(reply, destinations.list(org, query)),
    getTelemetryDestination: ({ org, params }) => destinations.get(org, params.id),
    updateTelemetryDestination: ({ org, params, body }) => destinations.update(org, params.id, body),
    deleteTelemetryDestination: ({ org, params }) => destinations.delete(org, params.id),
  };
}
