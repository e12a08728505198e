import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { realpath } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { execa, type ResultPromise } from 'execa';
import { ApiError, BadRequestError, ConflictError, ForbiddenError, NotFoundError, ServiceUnavailableError } from '../../src/errors.js';
import { sleep } from '../browser/procs.js';
import { hostTwin, writableRoots, type Sandbox, type SessionRoots } from '../sandbox/sandbox.js';
import { isSessionRoot } from './paths.js';

export interface FileInfo {
  name: string;
  path: string;
  size_bytes: number;
  is_dir: boolean;
  mod_time: string;
  mode: string;
}

/** Tool errors (LC_ALL=C, so the wording is stable) as API errors; the path is named, never a host path. */
function toApiError(stderr: string, path: string): ApiError {
  if (/No space left on device|Disk quota exceeded/.test(stderr)) return new ServiceUnavailableError(`${path}: no space left on the disk holding the session`);
  if (/No such file or directory/.test(stderr)) return new NotFoundError(`${path}: no such file or directory`);
  if (/Read-only file system|Permission denied|Operation not permitted/.test(stderr)) {
    return new ForbiddenError(`${path}: read-only or not permitted in this session`);
  }
  if (/Directory not empty|File exists/.test(stderr)) return new ConflictError(`${path}: ${stderr.includes('exists') ? 'already exists' : 'directory not empty'}`);
  if (/cannot overwrite directory/.test(stderr)) return BadRequestError.field('path', `${path} is a directory`);
  if (/Not a directory/.test(stderr)) return BadRequestError.field('path', `${path}: a component is not a directory`);
  if (/Is a directory/.test(stderr)) return BadRequestError.field('path', `${path} is a directory`);
  return new BadRequestError(`${path}: ${stderr.trim().split('\n').pop() ?? 'failed'}`);
}

/**
 * Filesystem operations of one session, each run as a coreutils command inside the session's
 * mount namespace: paths mean what they mean to the browser, and a symlink the page planted
 * resolves inside the sandbox (where the host is read-only and other sessions are hidden), so no
 * check-then-use race can reach outside. Without bubblewrap, paths are mapped onto the session's
 * directories and every resolved path is checked to stay inside them.
 */
export class FileOps {
  constructor(
    private readonly sandbox: Sandbox,
    private readonly roots: SessionRoots,
    private readonly env: Record<string, string>,
  ) {}

  /** Runs a command in the session; stdin and stdout may be streamed by the caller. */
  private spawn(cmd: string[], opts: { stdin?: 'pipe'; buffer?: boolean } = {}): ResultPromise {
    const [bin, ...args] = [...this.sandbox.wrap(this.roots), ...cmd];
    return execa(bin!, args, {
      env: { ...this.env, LC_ALL: 'C' },
      extendEnv: false,
      reject: false,
      stdin: opts.stdin ?? 'ignore',
      buffer: opts.buffer ?? true,
      encoding: 'buffer',
      stripFinalNewline: false,
    });
  }

  private async run(cmd: string[], path: string): Promise<Buffer> {
    return this.outcome(await this.spawn(cmd), path);
  }

  private outcome(r: { exitCode?: number; stdout: unknown; stderr: unknown }, path: string): Buffer {
    if (r.exitCode !== 0) throw toApiError(Buffer.from(r.stderr as Uint8Array).toString(), path);
    return Buffer.from(r.stdout as Uint8Array);
  }

  /** The path to hand a command: the same path in the sandbox, or its host twin (checked) without one. */
  private async target(path: string): Promise<string> {
    if (this.sandbox.enabled) return path;
    const host = hostTwin(this.roots, path);
    if (!host) throw new ForbiddenError(`${path}: only /home/kernel and /tmp are reachable in this session`);
    // The deepest existing ancestor must resolve inside the session (no symlink out).
    let probe = host;
    for (;;) {
      const real = await realpath(probe).catch(() => null);
      if (real !== null) {
        const inside = writableRoots(this.roots).some((r) => real === r.host || real.startsWith(`${r.host}/`));
        if (!inside) throw new ForbiddenError(`${path}: resolves outside the session`);
        return host;
      }
      const parent = probe.slice(0, probe.lastIndexOf('/'));
      if (!parent || parent === probe) return host;
      probe = parent;
    }
  }

  async createDirectory(path: string, mode = '755'): Promise<void> {
    await this.run(['mkdir', '-p', '-m', mode, '--', await this.target(path)], path);
  }

  /** Recursive; succeeds when the path is missing; removes a plain file too. */
  async deleteDirectory(path: string): Promise<void> {
    if (isSessionRoot(path)) throw BadRequestError.field('path', `${path} is a root of the session and cannot be removed`);
    await this.run(['rm', '-rf', '--', await this.target(path)], path);
  }

  async deleteFile(path: string): Promise<void> {
    await this.run(['rm', '--', await this.target(path)], path);
  }

  /** mode is required; owner and group are applied best-effort (by name or numeric id). */
  async setPermissions(path: string, mode: string, owner?: string, group?: string): Promise<void> {
    const target = await this.target(path);
    await this.run(['chmod', mode, '--', target], path);
    if (owner || group) await this.spawn(['chown', `${owner ?? ''}${group ? `:${group}` : ''}`, '--', target]);
  }

  async move(src: string, dest: string): Promise<void> {
    if (isSessionRoot(src)) throw BadRequestError.field('src_path', `${src} is a root of the session and cannot be moved`);
    await this.run(['mv', '-T', '--', await this.target(src), await this.target(dest)], src);
  }

  async info(path: string): Promise<FileInfo> {
    // -L: a link is described by what it points to (inside the sandbox, so never outside the session).
    const out = await this.run(['stat', '-L', '--printf', '%F\\0%s\\0%a\\0%Y\\0', '--', await this.target(path)], path);
    const [type, size, mode, mtime] = out.toString().split('\0');
    return {
      name: path === '/' ? '/' : path.slice(path.lastIndexOf('/') + 1),
      path,
      size_bytes: Number(size),
      is_dir: type === 'directory',
      mod_time: new Date(Number(mtime) * 1000).toISOString(),
      mode: mode!.padStart(4, '0'),
    };
  }

  async list(path: string): Promise<FileInfo[]> {
    const info = await this.info(path);
    if (!info.is_dir) throw BadRequestError.field('path', `${path} is not a directory`);
    const out = await this.run(
      // The browser makes and removes files in /tmp all the time: one gone between find's readdir
      // and its stat is left out, not an error of the whole listing.
      ['find', await this.target(path), '-ignore_readdir_race', '-mindepth', '1', '-maxdepth', '1', '-printf', '%f\\0%y\\0%s\\0%m\\0%T@\\0'],
      path,
    );
    const fields = out.toString().split('\0');
    const items: FileInfo[] = [];
    for (let i = 0; i + 5 <= fields.length; i += 5) {
      const [name, type, size, mode, mtime] = fields.slice(i, i + 5);
      items.push({
        name: name!,
        path: path === '/' ? `/${name}` : `${path}/${name}`,
        size_bytes: Number(size),
        is_dir: type === 'd',
        mod_time: new Date(Number(mtime) * 1000).toISOString(),
        mode: mode!.padStart(4, '0'),
      });
    }
    return items.sort((a, b) => a.name.localeCompare(b.name));
  }

  /** A stream of the file's bytes; a missing file or a directory is refused before any byte is sent. */
  async read(path: string): Promise<{ stream: Readable; size: number }> {
    const info = await this.info(path);
    if (info.is_dir) throw BadRequestError.field('path', `${path} is a directory`);
    const child = this.spawn(['cat', '--', await this.target(path)], { buffer: false });
    void child.catch(() => {}); // its outcome shows in the stream; nobody awaits the process
    return { stream: child.stdout!, size: info.size_bytes };
  }

  /** A zip of the directory's contents, streamed as zip(1) writes it inside the session. */
  async zipDirectory(path: string): Promise<Readable> {
    const info = await this.info(path);
    if (!info.is_dir) throw BadRequestError.field('path', `${path} is not a directory`);
    const dir = await this.target(path);
    const child = this.spawn(['sh', '-c', 'cd "$1" && exec zip -q -r -y - .', 'download_dir_zip', dir], { buffer: false });
    void child.catch(() => {}); // its outcome shows in the stream; nobody awaits the process
    return child.stdout!;
  }

  /**
   * Writes the stream to the file (created or replaced) as a whole or not at all: into a
   * temporary file beside it, which takes the old file's mode and then its place (`mode` applied
   * when given). When the client goes away mid-body the write is cut off and the temporary file
   * removed; when the write fails, the rest of the body is still read, so the client gets the
   * error answer instead of a connection cut mid-body.
   */
  /**
   * Unpacks a tar stream into a directory (created if missing), inside the session's namespace as
   * its user: whatever a symlink at the destination points to, the writes stay the session's.
   */
  async unpack(dir: string, tarStream: Readable): Promise<void> {
    const target = await this.target(dir);
    const child = this.spawn(['sh', '-c', 'mkdir -p -- "$1" && exec tar -x --no-same-owner --no-same-permissions -C "$1" -f -', 'upload_zip', target], { stdin: 'pipe' });
    child.stdin!.on('error', () => tarStream.unpipe(child.stdin!));
    tarStream.pipe(child.stdin!);
    this.outcome(await child, dir);
  }

  async write(path: string, input: Readable, mode?: string): Promise<void> {
    let temp: string | undefined;
    try {
      const target = await this.target(path);
      temp = `${target.slice(0, target.lastIndexOf('/') + 1)}.rbrowse-write-${randomBytes(6).toString('hex')}`;
      const child = this.spawn(['sh', '-c', 'cat > "$1" && { chmod --reference="$2" "$1" 2>/dev/null; true; }', 'write_file', temp, target], { stdin: 'pipe' });
      // The upload is piped by hand, not handed to execa, so a failed write never destroys it.
      child.stdin!.on('error', () => input.unpipe(child.stdin!));
      const cutOff = () => {
        if (!input.readableEnded) child.kill('SIGKILL');
      };
      input.once('error', cutOff).once('close', cutOff);
      input.pipe(child.stdin!);
      const done = await child;
      input.off('error', cutOff).off('close', cutOff);
      if (done.isTerminated) throw new BadRequestError(`${path}: the upload ended before its last byte; nothing was written`);
      this.outcome(done, path);
      if (mode) await this.run(['chmod', mode, '--', temp], path);
      await this.run(['mv', '-f', '-T', '--', temp, target], path);
      temp = undefined;
    } catch (err) {
      if (temp) await this.spawn(['rm', '-f', '--', temp]).catch(() => {});
      if (!input.readableEnded && !input.destroyed) {
        input.resume();
        await Promise.race([once(input, 'end'), once(input, 'close'), sleep(30_000)]).catch(() => {});
      }
      throw err;
    }
  }
}
