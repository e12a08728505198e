import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import type { Multipart } from '@fastify/multipart';
import { UploadZipFormSchema, type UploadZipForm } from '../../../src/api/fs.js';
import { receiveZipForm } from '../../lib/archive/receive-zip.js';
import { lazyValidator } from '../../lib/validators.js';
import { tarOf } from '../../lib/archive/tar-stream.js';
import { extractZip } from '../../lib/archive/unzip.js';
import { removeTree } from '../../lib/fs-util.js';
import { BadRequestError } from '../../../src/errors.js';
import type { FileOps } from '../../box/box-files.js';
import { sessionPath } from './paths.js';
import { formEntry, type FormPart } from '../../lib/form-entries.js';

/**
 * Multipart upload of several files. Each file is streamed into a temporary file inside the
 * session first (a part may come before the field naming its destination), then moved into
 * place; on any error the temporaries are removed and nothing is left half-written at a destination.
 */
export async function uploadFiles(files: FileOps, parts: AsyncIterable<FormPart>): Promise<number> {
  const temps = new Map<number, string>();
  const dests = new Map<number, string>();
  const seen = new Map<string, number>();
  try {
    for await (const part of parts) {
      const entry = formEntry(part.fieldname, 'files', ['file', 'dest_path'] as const, seen);
      if (!entry) {
        part.file?.resume();
        throw BadRequestError.field(part.fieldname, 'is not a field of an upload (files[i][file], files[i][dest_path])');
      }
      if (entry.key === 'dest_path') {
        dests.set(entry.index, sessionPath(`files.${entry.index}.dest_path`, String(part.value ?? '')));
      } else if (part.file) {
        const temp = `/tmp/.rbrowse-upload-${randomBytes(6).toString('hex')}`;
        temps.set(entry.index, temp);
        await files.write(temp, part.file);
      }
    }
    if (temps.size === 0) throw BadRequestError.field('files', 'at least one file is required');
    for (const index of temps.keys()) {
      if (!dests.has(index)) throw BadRequestError.field(`files.${index}.dest_path`, 'is required');
    }
    for (const [index, temp] of temps) {
      const dest = dests.get(index)!;
      await files.createDirectory(dest.slice(0, dest.lastIndexOf('/')) || '/');
      await files.move(temp, dest, dest);
      temps.delete(index);
    }
    return dests.size;
  } finally {
    for (const temp of temps.values()) await files.deleteFile(temp).catch(() => {});
  }
}

const MAX_ZIP_BYTES = 512 * 1024 ** 2;
const validateZipForm = lazyValidator<UploadZipForm>(UploadZipFormSchema);

/**
 * POST .../fs/upload_zip: the zip lands on the daemon's side of the session (its directory, never
 * seen by the browser), is extracted there with the archive rules every upload follows (no entry
 * outside, no links, no encryption, no bomb), and the result is unpacked into dest_path inside the
 * session's namespace. Nothing of it stays behind on a refusal.
 */
export async function uploadZip(session: { dirs: { root: string }; files: FileOps }, parts: AsyncIterable<Multipart>): Promise<void> {
  const staging = await mkdtemp(join(session.dirs.root, 'upload-zip-'));
  try {
    const zipPath = join(staging, 'upload.zip');
    const { form } = await receiveZipForm(parts, zipPath, {
      maxBytes: MAX_ZIP_BYTES,
      fileField: 'zip_file',
      validate: validateZipForm,
      what: 'the zip to extract',
    });
    const dest = sessionPath('dest_path', form.dest_path);
    const extracted = join(staging, 'x');
    await extractZip(zipPath, extracted, 'zip_file');
    await session.files.unpack(dest, await tarOf(extracted));
  } finally {
    await removeTree(staging);
  }
}
