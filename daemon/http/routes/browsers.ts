import { BadRequestError } from '../../../src/errors.js';
import { receiveSessionExtensions } from '../../features/extensions/ad-hoc.js';
import { MAX_UPLOAD_BYTES } from '../../features/extensions/extensions.js';
import { formParts } from '../../lib/form-entries.js';
import { sendPage } from '../../lib/paging.js';
import type { SessionManager } from '../../sessions/manager.js';
import { Quotas } from '../../org/quotas.js';
import type { HandlerGroup } from '../handlers.js';

export function browserHandlers(
  sessions: SessionManager,
  quotas: Quotas,
  log: (msg: string) => void,
): HandlerGroup<'createBrowser' | 'listBrowsers' | 'getBrowser' | 'updateBrowser' | 'deleteBrowser' | 'getLiveView' | 'loadBrowserExtensions'> {
  return {
    // Held until the session is registered, where the project's count sees it.
    createBrowser: ({ org, body }) => Quotas.holding(quotas.holdSessions(org), () => sessions.create(org, body)),
    listBrowsers: async ({ org, query, reply }) => sendPage(reply, await sessions.list(org, query)),
    getBrowser: ({ org, params, query }) => sessions.get(org, params.id, query.include_deleted),
    updateBrowser: ({ org, params, body }) => sessions.update(org, params.id, body),
    deleteBrowser: ({ org, params }) => sessions.delete(org, params.id),
    getLiveView: ({ org, params }) => sessions.liveView(org, params.id),
    loadBrowserExtensions: ({ org, params, request }) =>
      sessions.withSession(org, params.id, async (s) => {
        if (!request.isMultipart())
          throw new BadRequestError('an upload is a multipart/form-data request: extensions[i][name] and extensions[i][zip_file]');
        // One byte over the cap is enough to tell a zip too large.
        const received = await receiveSessionExtensions(s, formParts(request, { fileSize: MAX_UPLOAD_BYTES + 1 }), log);
        try {
          await sessions.restart(s, received.load);
        } finally {
          await received.discard();
        }
      }),
  };
}
