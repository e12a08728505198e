import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Multipart } from '@fastify/multipart';
import type { ValidateFunction } from 'ajv';
import { ApiError, BadRequestError } from '../../../src/errors.js';
import { validationDetails } from '../validation-details.js';

export interface ReceivedUpload<F> {
  form: F;
  /** Hex sha256 of the zip as uploaded, computed while it streamed to disk. */
  checksum: string;
  size: number;
}

/**
 * Reads a multipart form carrying one zip (an extension's, upload_zip's): the zip in `fileField`
 * streams to `zipPath` (hashed and counted on the way, `maxBytes` at most: 413 beyond), the text
 * fields are validated. The caller removes `zipPath` on a refusal.
 */
export async function receiveZipForm<F>(
  parts: AsyncIterable<Multipart>,
  zipPath: string,
  opts: {
    maxBytes: number;
    fileField: string;
    validate: ValidateFunction<F>;
    what: string;
    /** The refusal past a smaller bound than the route's own (the room an organization has left), in place of a 413. */
    room?: { bytes: number; refusal: () => ApiError };
  },
): Promise<ReceivedUpload<F>> {
  const { maxBytes, fileField, validate: validateForm } = opts;
  const fields: Record<string, unknown> = {};
  let received: { checksum: string; size: number } | undefined;
  for await (const part of parts) {
    if (part.type === 'field') {
      if (part.fieldname === fileField) throw BadRequestError.field(fileField, 'must be a file part (with a filename), not a text field');
      fields[part.fieldname] = part.value;
      continue;
    }
    if (part.fieldname !== fileField || received) {
      part.file.resume();
      throw BadRequestError.field(part.fieldname, `the zip goes in \`${fileField}\`, once`);
    }
    received = await receiveZipPart(part.file, zipPath, maxBytes, fileField, opts.room);
  }
  if (!received) throw BadRequestError.field(fileField, `is required: ${opts.what}`);
  if (!validateForm(fields)) {
    const details = validationDetails(validateForm.errors ?? [], 'form');
    throw new BadRequestError(`invalid form: ${details.map((d) => d.message).join('; ')}`, details);
  }
  return { form: fields, ...received };
}

/** Streams one zip part to `zipPath` (a new file), hashing and counting it: 413 past `maxBytes`. */
export async function receiveZipPart(
  file: Readable & { truncated?: boolean },
  zipPath: string,
  maxBytes: number,
  field: string,
  room?: { bytes: number; refusal: () => ApiError },
): Promise<{ checksum: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  let refused: Error | undefined;
  const count = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      size += chunk.length;
      // Past the room there was, the rest is read and dropped (never written), so the sender,
      // still sending, gets the refusal as an answer rather than a broken connection.
      if (room && !refused && size > room.bytes && room.bytes < maxBytes) refused = room.refusal();
      done(null, refused ? undefined : chunk);
    },
  });
  await pipeline(file, count, createWriteStream(zipPath, { flags: 'wx', mode: 0o600 }));
  if (refused) throw refused;
  // busboy stops at the limit and ends the stream early; the truncated zip must not pass.
  if (file.truncated || size > maxBytes) {
    throw new ApiError(413, 'payload_too_large', `${field}: the zip is larger than ${maxBytes / 1024 ** 2} MiB`);
  }
  return { checksum: hash.digest('hex'), size };
}
