import type { Invocations } from '../../apps/invocations.js';
import type { InvocationBrowsers } from '../../apps/invocation-browsers.js';
import { sendPage } from '../../lib/paging.js';
import { Quotas } from '../../org/quotas.js';
import { EventStream } from '../../lib/sse.js';
import type { HandlerGroup } from '../handlers.js';

export function invocationHandlers(
  invocations: Invocations,
  browsers: InvocationBrowsers,
  quotas: Quotas,
): HandlerGroup<
  | 'createInvocation'
  | 'listInvocations'
  | 'getInvocation'
  | 'updateInvocation'
  | 'invocationEvents'
  | 'listInvocationBrowsers'
  | 'deleteInvocationBrowsers'
> {
  return {
    createInvocation: async ({ org, body, reply }) => {
      // Held until the invocation's record is made, where the project's count sees it.
      const { accepted, invocation } = await Quotas.holding(quotas.holdInvocation(org), () => invocations.create(org, body));
      if (accepted) reply.code(202);
      return invocation;
    },
    listInvocations: ({ org, query, reply }) => sendPage(reply, invocations.list(org, query)),
    getInvocation: ({ org, params }) => invocations.get(org, params.id),
    updateInvocation: ({ org, params, body }) => invocations.update(org, params.id, body),
    invocationEvents: ({ org, params, query, reply }) =>
      EventStream.serve(reply, (stream) => invocations.events(org, params.id, query.since, stream)),
    listInvocationBrowsers: ({ org, params }) => browsers.list(org, params.id),
    deleteInvocationBrowsers: ({ org, params }) => browsers.delete(org, params.id),
  };
}
