import { init } from '@paralleldrive/cuid2';

/** Kernel's IDs are 24-char lowercase alphanumerics in cuid2 style; the SDK and CLI accept nothing else as an ID. */
export const newId: () => string = init({ length: 24 });
