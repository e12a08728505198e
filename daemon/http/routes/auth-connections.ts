import type { AuthConnections } from '../../managed-auth/auth-connections.js';
import { sendPage } from '../../lib/paging.js';
import { EventStream } from '../../lib/sse.js';
import type { HandlerGroup } from '../handlers.js';

export function authConnectionHandlers(
  connections: AuthConnections,
): HandlerGroup<
  | 'createAuthConnection'
  | 'listAuthConnections'
  | 'getAuthConnection'
  | 'updateAuthConnection'
  | 'deleteAuthConnection'
  | 'authConnectionEvents'
  | 'loginAuthConnection'
  | 'submitAuthConnection'
  | 'authConnectionTimeline'
  | 'redeemAuthHandoff'
> {
  return {
    createAuthConnection: ({ org, body }) => connections.create(org, body),
    listAuthConnections: ({ org, query, reply }) => sendPage(reply, connections.list(org, query)),
    getAuthConnection: ({ org, params }) => connections.get(org, params.id),
    updateAuthConnection: ({ org, params, body }) => connections.update(org, params.id, body),
    deleteAuthConnection: ({ org, params }) => connections.delete(org, params.id),
    authConnectionEvents: ({ org, params, reply }) => EventStream.serve(reply, (stream) => connections.follow(org, params.id, stream)),
    loginAuthConnection: ({ org, params, body }) => connections.login(org, params.id, body ?? {}),
    submitAuthConnection: ({ org, params, body }) => connections.submit(org, params.id, body),
    authConnectionTimeline: ({ org, params, query, reply }) => sendPage(reply, connections.timeline(org, params.id, query)),
    redeemAuthHandoff: ({ params, reply }) => void reply.header('location', connections.redeemHandoff(params.code)),
  };
}
