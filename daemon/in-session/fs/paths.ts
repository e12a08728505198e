import { posix } from 'node:path';
import { BadRequestError } from '../../../src/errors.js';

export const MODE_PATTERN = /^[0-7]{3,4}$/;

/**
 * An API path as the browser sees it: absolute, without `..` segments or NUL bytes, normalized.
 * `..` is refused outright rather than resolved, so a request never means a path it does not spell.
 */
export function sessionPath(field: string, raw: string): string {
  if (!raw.startsWith('/')) throw BadRequestError.field(field, 'must be an absolute path');
  if (raw.includes('\0')) throw BadRequestError.field(field, 'must not contain NUL bytes');
  if (raw.split('/').includes('..')) throw BadRequestError.field(field, 'must not contain ".." segments');
  const normalized = posix.normalize(raw);
  return normalized.length > 1 ? normalized.replace(/\/+$/, '') : normalized;
}

export function octalMode(field: string, raw: string): string {
  if (!MODE_PATTERN.test(raw)) throw BadRequestError.field(field, 'must be an octal mode such as 755 or 0644');
  return raw;
}
