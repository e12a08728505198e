import type { Credentials } from '../../org/credentials/credentials.js';
import type { CredentialProviders } from '../../org/credentials/providers.js';
import { sendPage } from '../../lib/paging.js';
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

export function credentialProviderHandlers(
  providers: CredentialProviders,
): HandlerGroup<
  | 'createCredentialProvider'
  | 'listCredentialProviders'
  | 'getCredentialProvider'
  | 'updateCredentialProvider'
  | 'deleteCredentialProvider'
  | 'credentialProviderItems'
  | 'testCredentialProvider'
> {
  return {
    createCredentialProvider: ({ org, body }) => providers.create(org, body),
    listCredentialProviders: ({ org, query, reply }) => sendPage(reply, providers.list(org, query)),
    getCredentialProvider: ({ org, params }) => providers.get(org, params.id),
    updateCredentialProvider: ({ org, params, body }) => providers.update(org, params.id, body),
    deleteCredentialProvider: ({ org, params }) => providers.delete(org, params.id),
    credentialProviderItems: ({ org, params }) => providers.items(org, params.id),
    testCredentialProvider: ({ org, params }) => providers.test(org, params.id),
  };
}
