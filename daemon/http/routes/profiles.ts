import { sendPage } from '../../lib/paging.js';
import type { Profiles } from '../../features/profiles/profiles.js';
import type { HandlerGroup } from '../handlers.js';

export function profileHandlers(
  profiles: Profiles,
): HandlerGroup<'createProfile' | 'listProfiles' | 'getProfile' | 'updateProfile' | 'deleteProfile' | 'downloadProfile'> {
  return {
    createProfile: ({ org, body }) => profiles.create(org, body),
    listProfiles: ({ org, query, reply }) => sendPage(reply, profiles.list(org, query)),
    getProfile: ({ org, params }) => profiles.get(org, params.id),
    updateProfile: ({ org, params, body }) => profiles.update(org, params.id, body),
    deleteProfile: ({ org, params }) => profiles.delete(org, params.id),
    downloadProfile: async ({ org, params, query, reply }) => {
      const download = await profiles.download(org, params.id, query.format);
      // Nothing saved yet: accepted, no body (kernel-wire).
      if (!download) {
        reply.code(202);
        return '';
      }
      reply.type(download.contentType).header('content-disposition', `attachment; filename="${download.filename}"`);
      return download.stream;
    },
  };
}
