import { init } from '@paralleldrive/cuid2';

let generate: (() => string) | undefined;

/**
 * Kernel's IDs are 24-char lowercase alphanumerics in cuid2 style; the SDK and CLI accept nothing
 * else as an ID. The generator is made on the first ID: making it hashes a fingerprint of the host,
 * work enough to wake V8's optimizing compilers in a daemon that may sit idle.
 */
export const newId = (): string => (generate ??= init({ length: 24 }))();
