import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { posix } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Multipart } from '@fastify/multipart';
import { DeployFormSchema, type DeployForm } from '../../src/api/deployments.js';
import { BadRequestError } from '../../src/errors.js';
import { validationDetails } from '../lib/validation-details.js';
import { lazyValidator } from '../lib/validators.js';

// Form fields are text, as query strings are: "true" is a boolean here.
const validateForm = lazyValidator<DeployForm>(DeployFormSchema, { coerceTypes: true });

export interface ReceivedDeploy {
  /** With its entrypoint resolved: the zip's, or the source's. */
  form: DeployForm & { entrypoint_rel_path: string };
  /** Hex sha256 of the zip, computed while it streamed to disk; undefined for a `source` to fetch. */
  checksum?: string;
}

/** `env_vars[KEY]` (the Node SDK) or `env_vars.KEY` (the Go SDK). */
const ENV_FIELD = /^env_vars(?:\[(.+)\]|\.(.+))$/;

/**
 * Reads POST /deployments' multipart form: the zip in `file` streams to `zipPath` (hashed on the
 * way), the text fields are gathered and validated against DeployFormSchema. Any refusal is a 400
 * naming the field, and removes what was written.
 */
export async function receiveDeploy(
  parts: AsyncIterable<Multipart>,
  zipPath: string,
  /** The organization's room on the disk, refused in its own words as the zip's bytes pass it. */
  room?: { bytes: number; refusal: () => Error },
): Promise<ReceivedDeploy> {
  const fields: Record<string, unknown> = {};
  const envVars: Record<string, unknown> = {};
  let checksum: string | undefined;
  try {
    for await (const part of parts) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file' || checksum !== undefined) {
          part.file.resume();
          throw BadRequestError.field(part.fieldname, 'the zip of the app goes in `file`, once');
        }
        const hash = createHash('sha256');
        let size = 0;
        let refused: Error | undefined;
        await pipeline(
          part.file,
          async function* (chunks: AsyncIterable<Buffer>) {
            for await (const chunk of chunks) {
              hash.update(chunk);
              size += chunk.length;
              // Past the room there was, the rest is read and dropped, so the sender gets the refusal as an answer.
              if (room && !refused && size > room.bytes) refused = room.refusal();
              if (!refused) yield chunk;
            }
          },
          createWriteStream(zipPath, { mode: 0o600 }),
        );
        if (refused) throw refused;
        checksum = hash.digest('hex');
        continue;
      }
      const env = ENV_FIELD.exec(part.fieldname);
      if (env) envVars[env[1] ?? env[2]!] = part.value;
      else if (part.fieldname === 'env_vars') Object.assign(envVars, jsonObject('env_vars', part.value));
      else if (part.fieldname === 'source') fields.source = jsonObject('source', part.value, '');
      else fields[part.fieldname] = part.value;
    }
    const form = { ...fields, ...(Object.keys(envVars).length ? { env_vars: envVars } : {}) };
    if (!validateForm(form)) {
      const details = validationDetails(validateForm.errors ?? [], 'form');
      throw new BadRequestError(`invalid form: ${details.map((d) => d.message).join('; ')}`, details);
    }
    if (form.source && checksum !== undefined) throw BadRequestError.field('source', 'give the app as a zip in `file` or as a `source`, not both');
    if (!form.source && checksum === undefined)
      throw BadRequestError.field('file', 'is required: a zip of the app directory (or a `source` to fetch it from)');
    const entrypoint = form.source?.entrypoint ?? form.entrypoint_rel_path;
    if (entrypoint === undefined) throw BadRequestError.field('entrypoint_rel_path', 'is required');
    return { form: { ...form, entrypoint_rel_path: entrypointPath(entrypoint) }, ...(checksum !== undefined ? { checksum } : {}) };
  } catch (err) {
    await rm(zipPath, { force: true });
    throw err;
  }
}

function jsonObject(field: string, value: unknown, otherwise = 'or sent as env_vars[KEY] fields'): Record<string, unknown> {
  try {
    const parsed = JSON.parse(String(value)) as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // refused below
  }
  throw BadRequestError.field(field, `must be a JSON object${otherwise ? `, ${otherwise}` : ''}`);
}

/** The entrypoint as a clean path inside the app: relative, no `..`, no backslashes. */
export function entrypointPath(raw: string): string {
  const refuse = (why: string) => BadRequestError.field('entrypoint_rel_path', why);
  if (raw.includes('\\') || raw.includes('\0')) throw refuse('may not contain backslashes or NUL');
  if (posix.isAbsolute(raw)) throw refuse('must be relative to the app directory');
  if (raw.split('/').includes('..')) throw refuse('may not contain ..');
  const clean = posix.normalize(raw);
  if (clean === '.' || clean.endsWith('/')) throw refuse('must name a file');
  // JavaScript and TypeScript apps run on Node (TypeScript through tsx), Python ones on python3.
  if (!/\.([cm]?[jt]sx?|py)$/.test(clean)) throw refuse('must be a JavaScript, TypeScript or Python file (.ts, .js, .mjs, .py, ...)');
  return clean;
}
