import { Readable } from 'node:stream';
import { BadRequestError } from '../../../src/errors.js';
import { octalMode, sessionPath } from '../../in-session/fs/paths.js';
import { uploadFiles, uploadZip } from '../../in-session/fs/upload.js';
import { formParts } from '../../lib/form-entries.js';
import type { SessionManager } from '../../sessions/manager.js';
import type { HandlerGroup } from '../handlers.js';
import { EventStream } from '../../lib/sse.js';
import { watchesOf } from '../../in-session/fs/watches.js';

type FsOps =
  | 'fsCreateDirectory'
  | 'fsDeleteDirectory'
  | 'fsSetFilePermissions'
  | 'fsDeleteFile'
  | 'fsMove'
  | 'fsFileInfo'
  | 'fsListFiles'
  | 'fsReadFile'
  | 'fsWriteFile'
  | 'fsUpload'
  | 'fsUploadZip'
  | 'fsWatchStart'
  | 'fsWatchEvents'
  | 'fsWatchStop'
  | 'fsDownloadDirZip';

/** Each operation runs inside the caller's session (404 for another org's or an ended one). */
export function fsHandlers(sessions: SessionManager): HandlerGroup<FsOps> {
  const inSession = sessions.withSession.bind(sessions);
  return {
    fsCreateDirectory: ({ org, params, body }) =>
      inSession(org, params.id, (s) =>
        s.files.createDirectory(sessionPath('path', body.path), body.mode === undefined ? '755' : octalMode('mode', body.mode)),
      ),
    fsDeleteDirectory: ({ org, params, body }) => inSession(org, params.id, (s) => s.files.deleteDirectory(sessionPath('path', body.path))),
    fsSetFilePermissions: ({ org, params, body }) =>
      inSession(org, params.id, (s) => s.files.setPermissions(sessionPath('path', body.path), octalMode('mode', body.mode), body.owner, body.group)),
    fsDeleteFile: ({ org, params, body }) => inSession(org, params.id, (s) => s.files.deleteFile(sessionPath('path', body.path))),
    fsMove: ({ org, params, body }) =>
      inSession(org, params.id, (s) => s.files.move(sessionPath('src_path', body.src_path), sessionPath('dest_path', body.dest_path))),
    fsFileInfo: ({ org, params, query }) => inSession(org, params.id, (s) => s.files.info(sessionPath('path', query.path))),
    fsListFiles: ({ org, params, query }) => inSession(org, params.id, (s) => s.files.list(sessionPath('path', query.path))),
    fsReadFile: ({ org, params, query }) =>
      inSession(org, params.id, async (s) => {
        const { stream } = await s.files.read(sessionPath('path', query.path));
        // The session stays active until the last byte is out, not just until the stream starts.
        stream.once('close', s.hold('api'));
        // No content-length: the file may change while it is read; a chunked answer ends cleanly whatever it does.
        return stream;
      }),
    fsDownloadDirZip: ({ org, params, query }) =>
      inSession(org, params.id, async (s) => {
        const stream = await s.files.zipDirectory(sessionPath('path', query.path));
        stream.once('close', s.hold('api'));
        return stream;
      }),
    fsUpload: ({ org, params, request }) =>
      inSession(org, params.id, async (s) => {
        if (!request.isMultipart()) throw new BadRequestError('an upload is a multipart/form-data request');
        await uploadFiles(s.files, formParts(request));
      }),
    fsUploadZip: ({ org, params, request }) =>
      inSession(org, params.id, async (s) => {
        if (!request.isMultipart()) throw new BadRequestError('an upload is a multipart/form-data request');
        await uploadZip(s, request.parts());
      }),
    fsWatchStart: ({ org, params, body, reply }) =>
      inSession(org, params.id, async (s) => {
        reply.code(201);
        return { watch_id: await watchesOf(s).start(sessionPath('path', body.path), body.recursive === true) };
      }),
    fsWatchEvents: ({ org, params, reply }) =>
      inSession(org, params.id, async (s) => {
        const watch = watchesOf(s).get(params.watch_id);
        const stream = new EventStream();
        // A reader is a connected client: the session stays active while one follows a watch.
        stream.onClose(s.hold('api', () => stream.end()));
        watch.read(stream);
        return stream.open(reply);
      }),
    fsWatchStop: ({ org, params }) => inSession(org, params.id, async (s) => watchesOf(s).end(params.watch_id)),
    fsWriteFile: ({ org, params, query, body }) =>
      inSession(org, params.id, (s) =>
        s.files.write(
          sessionPath('path', query.path),
          // No body at all: an empty file.
          (body as Readable | undefined) ?? Readable.from([]),
          query.mode === undefined ? undefined : octalMode('mode', query.mode),
        ),
      ),
  };
}
