import type { Readable } from 'node:stream';
import type { FastifyRequest } from 'fastify';

/** A multipart form's part as the daemon reads it: a file stream, or a text field's value. */
export interface FormPart {
  fieldname: string;
  /** A file part's bytes (busboy marks it truncated past its size limit); absent for a text field. */
  file?: Readable & { truncated?: boolean };
  value?: unknown;
}

/** @fastify/multipart's parts as FormParts; `limits` are busboy's (file size, counts). */
export async function* formParts(request: FastifyRequest, limits?: { fileSize?: number; files?: number; fields?: number }): AsyncIterable<FormPart> {
  for await (const part of request.parts(limits ? { limits } : undefined)) {
    yield part.type === 'file' ? { fieldname: part.fieldname, file: part.file } : { fieldname: part.fieldname, value: part.value };
  }
}

/**
 * The index and key of one field of an array of objects in a multipart form, in any SDK's
 * encoding: the Node SDK's `files[0][file]`, or the Go SDK's repeated `files.file` and the Python
 * SDK's repeated `files[][file]` (both counted in order, per key, in `seen`: the n-th `file` goes
 * with the n-th `dest_path`). null for any other field.
 */
export function formEntry<K extends string>(
  fieldname: string,
  array: string,
  keys: readonly K[],
  seen: Map<string, number>,
): { index: number; key: K } | null {
  const node = /^(\w+)\[(\d+)\]\[(\w+)\]$/.exec(fieldname);
  if (node && node[1] === array && keys.includes(node[3] as K)) return { index: Number(node[2]), key: node[3] as K };
  const counted = /^(\w+)\.(\w+)$/.exec(fieldname) ?? /^(\w+)\[\]\[(\w+)\]$/.exec(fieldname);
  if (!counted || counted[1] !== array || !keys.includes(counted[2] as K)) return null;
  const key = counted[2] as K;
  const index = seen.get(key) ?? 0;
  seen.set(key, index + 1);
  return { index, key };
}
