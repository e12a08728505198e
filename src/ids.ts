import { customAlphabet } from 'nanoid';

const LETTERS = 'abcdefghijklmnopqrstuvwxyz';
const first = customAlphabet(LETTERS, 1);
const rest = customAlphabet(`0123456789${LETTERS}`, 23);

/**
 * Kernel's IDs are 24-char lowercase alphanumerics in cuid2's shape (a letter first); the SDK and
 * CLI accept nothing else as an ID. 23 random base-36 characters carry 118 bits from the OS's
 * CSPRNG. cuid2 itself hashed every ID with SHA3-512 and converted it with bignumber.js, a loop hot
 * enough that V8 sometimes optimized it with TurboFan in an idle daemon, which put the compiler's
 * ~5 MiB of code into its RSS.
 */
export const newId = (): string => first() + rest();
