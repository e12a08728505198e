import type { Credentials } from '../../credentials/credentials.js';
import { sendPage } from '../../paging.js';
import type { HandlerGroup } from '../handlers.js';

export function credentialHandlers(
  credentials: Credentials,
): HandlerGroup<'createCredential' | 'listCredentials' | 'getCredential' | 'updateCredential' | 'deleteCredential' | 'credentialTotpCode'> {
  return {
    createCredential: ({ org, body }) => credentials.create(org, body),
    listCredentials: ({ org, query, reply }) => sendPage(reply, credentials.list(org, query)),
    getCredential: ({ org, params }) => credentials.get(org, params.id),
    updateCredential: ({ org, params, body }) => credentials.update(org, params.id, body),
    deleteCredential: ({ org, params }) => credentials.delete(org, params.id),
    credentialTotpCode: ({ org, params }) => credentials.totpCode(org, params.id),
  };
}
