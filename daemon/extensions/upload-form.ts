import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Multipart } from '@fastify/multipart';
import { Ajv } from 'ajv';
import { ExtensionFormSchema, type ExtensionForm } from '../../src/api/extensions.js';
import { ApiError, BadRequestError } from '../../src/errors.js';
import { validationDetails } from '../http/errors.js';

const validateForm = new Ajv({ allErrors: true, strict: false }).compile<ExtensionForm>(ExtensionFormSchema);

export interface ReceivedUpload {
  form: ExtensionForm;
  /** Hex sha256 of the zip as uploaded, computed while it streamed to disk. */
  checksum: string;
  size: number;
}

/**
 * Reads POST /extensions' multipart form: the zip in `file` streams to `zipPath` (hashed and
 * counted on the way, `maxBytes` at most: 413 beyond), the text fields are validated against
 * ExtensionFormSchema. The caller removes `zipPath` on a refusal.
 */
export async function receiveUpload(parts: AsyncIterable<Multipart>, zipPath: string, maxBytes: number): Promise<ReceivedUpload> {
  const fields: Record<string, unknown> = {};
  let received: { checksum: string; size: number } | undefined;
  for await (const part of parts) {
    if (part.type === 'field') {
      if (part.fieldname === 'file') throw BadRequestError.field('file', 'must be a file part (with a filename), not a text field');
      fields[part.fieldname] = part.value;
      continue;
    }
    if (part.fieldname !== 'file' || received) {
      part.file.resume();
      throw BadRequestError.field(part.fieldname, 'the zip of the extension goes in `file`, once');
    }
    const hash = createHash('sha256');
    let size = 0;
    const count = new Transform({
      transform(chunk: Buffer, _enc, done) {
        hash.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    await pipeline(part.file, count, createWriteStream(zipPath, { flags: 'wx', mode: 0o600 }));
    // busboy stops at the limit and ends the stream early; the truncated zip must not pass.
    if (part.file.truncated || size > maxBytes) {
      throw new ApiError(413, 'payload_too_large', `file: the zip is larger than ${maxBytes / 1024 ** 2} MiB`);
    }
    received = { checksum: hash.digest('hex'), size };
  }
  if (!received) throw BadRequestError.field('file', 'is required: a zip of the unpacked extension');
  if (!validateForm(fields)) {
    const details = validationDetails(validateForm.errors ?? [], 'form');
    throw new BadRequestError(`invalid form: ${details.map((d) => d.message).join('; ')}`, details);
  }
  return { form: fields, ...received };
}
