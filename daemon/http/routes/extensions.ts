import type { Extensions } from '../../features/extensions/extensions.js';
import { fetchFromChromeStore, storeExtensionId } from '../../features/extensions/chrome-store.js';
import { MAX_UPLOAD_BYTES } from '../../features/extensions/extensions.js';
import { BadRequestError } from '../../../src/errors.js';
import { sendPage } from '../../lib/paging.js';
import type { HandlerGroup } from '../handlers.js';

type ExtensionOps =
  | 'uploadExtension'
  | 'listExtensions'
  | 'getExtension'
  | 'downloadExtension'
  | 'deleteExtension'
  | 'downloadExtensionFromChromeStore';

export function extensionHandlers(extensions: Extensions): HandlerGroup<ExtensionOps> {
  return {
    uploadExtension: ({ org, request }) => {
      if (!request.isMultipart()) {
        throw new BadRequestError('an upload is a multipart/form-data request: the zip in `file`, optionally a `name`');
      }
      // One byte over the cap is enough to tell a zip too large.
      return extensions.upload(org, request.parts({ limits: { fileSize: MAX_UPLOAD_BYTES + 1, files: 2, fields: 10 } }));
    },
    listExtensions: ({ org, query, reply }) => sendPage(reply, extensions.list(org, query)),
    getExtension: ({ org, params }) => extensions.get(org, params.id),
    downloadExtension: async ({ org, params, reply }) => {
      const { stream, size, filename } = await extensions.download(org, params.id);
      reply.header('content-length', size).header('content-disposition', `attachment; filename="${filename}"`);
      return stream;
    },
    deleteExtension: ({ org, params }) => extensions.delete(org, params.id),
    downloadExtensionFromChromeStore: async ({ query, reply }) => {
      const zip = await fetchFromChromeStore({ url: query.url, os: query.os ?? 'linux', maxBytes: MAX_UPLOAD_BYTES });
      reply.header('content-disposition', `attachment; filename="${storeExtensionId(query.url)}.zip"`);
      return zip;
    },
  };
}
