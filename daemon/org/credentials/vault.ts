import { randomBytes } from 'node:crypto';
import { CompactEncrypt, compactDecrypt } from 'jose';
import { readOrCreateSecret } from '../../lib/secret-file.js';

/**
 * Seals secrets at rest: a JSON value becomes a compact JWE (direct AES-256-GCM, jose) under a
 * 256-bit key kept in its own 0600 file, so the state document holds only ciphertext and a copy
 * of state.json alone reveals nothing.
 */
export class Vault {
  private constructor(private readonly key: Uint8Array) {}

  static async open(keyFile: string): Promise<Vault> {
    const encoded = await readOrCreateSecret(keyFile, () => randomBytes(32).toString('base64url'));
    const key = Buffer.from(encoded, 'base64url');
    if (key.length !== 32) throw new Error(`${keyFile} does not hold a 256-bit key`);
    return new Vault(key);
  }

  seal(value: unknown): Promise<string> {
    return new CompactEncrypt(Buffer.from(JSON.stringify(value))).setProtectedHeader({ alg: 'dir', enc: 'A256GCM' }).encrypt(this.key);
  }

  async open<T>(sealed: string): Promise<T> {
    const { plaintext } = await compactDecrypt(sealed, this.key);
    return JSON.parse(Buffer.from(plaintext).toString('utf8')) as T;
  }
}
