import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Proxy passwords, one file each (mode 600) under the credentials directory, so they never sit in
 * state.json beside everything else and never reach an API response.
 */
export class ProxySecrets {
  constructor(private readonly dir: string) {}

  private file(id: string): string {
    return join(this.dir, id);
  }

  async write(id: string, password: string): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await writeFile(this.file(id), password, { mode: 0o600 });
  }

  async read(id: string): Promise<string> {
    return readFile(this.file(id), 'utf8');
  }

  async remove(id: string): Promise<void> {
    await rm(this.file(id), { force: true });
  }
}
