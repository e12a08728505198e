import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { PassThrough, type Readable } from 'node:stream';
import { type ApiError, BadRequestError, ConflictError, ForbiddenError, NotFoundError, ServiceUnavailableError } from '../../src/errors.js';
import { sleep } from '../lib/procs.js';
import type { Box, BoxProcess } from './box.js';
import { outputOf } from './box-process.js';
import { BOX_USER } from './box-spec.js';

/** The roots of the session's own files, which must never be removed or moved themselves. */
const isSessionRoot = (path: string) => path === '/' || path === BOX_USER.home || path === '/tmp';

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
  if (/No space left on device|Disk quota exceeded/.test(stderr))
    return new ServiceUnavailableError(`${path}: no space left on the disk holding the session`);
  if (/No such file or directory|Directory nonexistent/.test(stderr)) return new NotFoundError(`${path}: no such file or directory`);
  if (/Read-only file system|Permission denied|Operation not permitted/.test(stderr)) {
    return new ForbiddenError(`${path}: read-only or not permitted in this session`);
  }
  if (/Directory not empty|File exists/.test(stderr))
    return new ConflictError(`${path}: ${stderr.includes('exists') ? 'already exists' : 'directory not empty'}`);
  if (/cannot overwrite directory/.test(stderr)) return BadRequestError.field('path', `${path} is a directory`);
  if (/Not a directory/.test(stderr)) return BadRequestError.field('path', `${path}: a component is not a directory`);
  if (/Is a directory/.test(stderr)) return BadRequestError.field('path', `${path} is a directory`);
  return new BadRequestError(`${path}: ${stderr.trim().split('\n').pop() ?? 'failed'}`);
}

/**
 * Filesystem operations of one box (a session's), each run as a coreutils command inside it, as
 * its user: paths mean what they mean to the browser, and a symlink the page planted resolves
 * inside the box, where the host is an allow-list of read-only system files and the only writable
 * places are the box's own disk. The daemon never opens a path of the session's on the host.
 */
export class FileOps {
  constructor(private readonly box: Box) {}

  /** Runs a command in the box; stdin and stdout may be streamed by the caller. */
  private spawn(cmd: string[], opts: { stdin?: 'pipe' } = {}): BoxProcess {
    return this.box.spawn(cmd, { env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' }, cwd: '/', ...(opts.stdin ? { stdin: 'pipe' } : {}) });
  }

  private async run(cmd: string[], path: string): Promise<Buffer> {
    return this.outcome(await outputOf(this.spawn(cmd)), path);
  }

  private outcome(r: { code: number | null; stdout: Buffer; stderr: Buffer }, path: string): Buffer {
    if (r.code !== 0) throw toApiError(r.stderr.toString(), path);
    return r.stdout;
  }

  async createDirectory(path: string, mode = '755'): Promise<void> {
    await this.run(['mkdir', '-p', '-m', mode, '--', path], path);
  }

  /** Recursive; succeeds when the path is missing; removes a plain file too. */
  async deleteDirectory(path: string): Promise<void> {
    if (isSessionRoot(path)) throw BadRequestError.field('path', `${path} is a root of the session and cannot be removed`);
    await this.run(['rm', '-rf', '--', path], path);
  }

  async deleteFile(path: string): Promise<void> {
    await this.run(['rm', '--', path], path);
  }

  /** mode is required; owner and group are applied best-effort (by name or numeric id). */
  async setPermissions(path: string, mode: string, owner?: string, group?: string): Promise<void> {
    await this.run(['chmod', mode, '--', path], path);
    if (owner || group) await outputOf(this.spawn(['chown', `${owner ?? ''}${group ? `:${group}` : ''}`, '--', path]));
  }

  /** `named`: the path its errors name (an upload's moves name where the file was to go, not its staging file). */
  async move(src: string, dest: string, named = src): Promise<void> {
    if (isSessionRoot(src)) throw BadRequestError.field('src_path', `${src} is a root of the session and cannot be moved`);
    await this.run(['mv', '-T', '--', src, dest], named);
  }

  async info(path: string): Promise<FileInfo> {
    // -L: a link is described by what it points to (inside the box, so never outside the session).
    const out = await this.run(['stat', '-L', '--printf', '%F\\0%s\\0%a\\0%Y\\0', '--', path], path);
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

  /** The bytes a directory's files take (du), for what writing them elsewhere will cost. */
  async usage(path: string): Promise<number> {
    const out = await this.run(['du', '-s', '-B1', '--', path], path);
    return Number(out.toString().split(/\s/)[0]) || 0;
  }

  async list(path: string): Promise<FileInfo[]> {
    const info = await this.info(path);
    if (!info.is_dir) throw BadRequestError.field('path', `${path} is not a directory`);
    const out = await this.run(
      // The browser makes and removes files in /tmp all the time: one gone between find's readdir
      // and its stat is left out, not an error of the whole listing.
      ['find', path, '-ignore_readdir_race', '-mindepth', '1', '-maxdepth', '1', '-printf', '%f\\0%y\\0%s\\0%m\\0%T@\\0'],
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

  /**
   * A stream of the file's bytes; a missing, unreadable or directory path is refused before any
   * byte is sent: the file is opened first (its first byte read), and only then is the answer's
   * head written, so a read that cannot start is an error, never a 200 followed by nothing.
   */
  /**
   * A regular file's bytes, at most as many as it had when asked for (a file that grows while read
   * is cut there, one that shrinks ends early): the answer is streamed without a length, so it is
   * whole and well formed whatever the file does meanwhile. What is not a regular file (a FIFO, a
   * device, a socket, the kernel's files under /proc and /sys, whose sizes say nothing of what
   * reading them gives) is refused.
   */
  async read(path: string): Promise<{ stream: Readable; size: number }> {
    const out = await this.run(['sh', '-c', 'realpath -e -- "$1" && stat -L --printf "%F\\0%s" -- "$1"', 'read_file', path], path);
    const [real, rest] = [out.toString().slice(0, out.indexOf('\n')), out.toString().slice(out.indexOf('\n') + 1)];
    const [type, size] = rest.split('\0');
    if (type === 'directory') throw BadRequestError.field('path', `${path} is a directory`);
    if (type !== 'regular file' && type !== 'regular empty file')
      throw BadRequestError.field('path', `${path} is not a regular file (${type}): only files can be read`);
    if (/^\/(proc|sys|dev)(\/|$)/.test(real))
      throw BadRequestError.field('path', `${path} is a file of the kernel's (${real}), not one that can be read as bytes`);
    const bytes = Number(size);
    const child = this.spawn(['head', '-c', String(bytes), '--', path]);
    return { stream: await streamOrError(child, path), size: bytes };
  }

  /**
   * A zip of the directory's contents, made inside the box (links stored as links) into a file of
   * its own /tmp first, so a zip that cannot be completed (an unreadable file, a full disk) is an
   * error, never a truncated 200; then streamed and removed.
   */
  async zipDirectory(path: string): Promise<Readable> {
    const info = await this.info(path);
    if (!info.is_dir) throw BadRequestError.field('path', `${path} is not a directory`);
    const temp = `/tmp/.rbrowse-zip-${randomBytes(6).toString('hex')}.zip`;
    const made = await outputOf(this.spawn(['sh', '-c', 'cd "$1" && exec zip -q -r -y "$2" .', 'download_dir_zip', path, temp]));
    if (made.code !== 0) {
      await outputOf(this.spawn(['rm', '-f', '--', temp]));
      const why = made.stderr.toString().trim().split('\n').pop() ?? '';
      if (/Permission denied|not readable|Operation not permitted/i.test(why))
        throw new ForbiddenError(`${path}: some of it is not readable in this session (${why})`);
      if (/No space left|Disk quota/i.test(why)) throw new ServiceUnavailableError(`${path}: no space left on the session's disk for the zip`);
      // zip says "zip error: Nothing to do!" for an empty directory: an empty zip is the answer.
      if (made.code === 12) return emptyZip();
      throw new BadRequestError(`${path}: the zip could not be made (${why || `exit ${made.code}`})`);
    }
    const child = this.spawn(['sh', '-c', 'exec cat -- "$1" && rm -f -- "$1"', 'download_dir_zip', temp]);
    return streamOrError(child, path);
  }

  /**
   * Unpacks a tar stream into a directory (created if missing), inside the box as its user:
   * whatever a symlink at the destination points to, the writes stay the box's.
   */
  async unpack(dir: string, tarStream: Readable): Promise<void> {
    const child = this.spawn(['sh', '-c', 'mkdir -p -- "$1" && exec tar -x --no-same-owner --no-same-permissions -C "$1" -f -', 'upload_zip', dir], {
      stdin: 'pipe',
    });
    child.stdin!.on('error', () => tarStream.unpipe(child.stdin!));
    tarStream.pipe(child.stdin!);
    this.outcome(await outputOf(child), dir);
  }

  /** A tar stream of what a command inside the box packs (a profile's user data), or an error once it failed. */
  pack(script: string, args: string[]): { stream: Readable; done: Promise<void> } {
    const child = this.spawn(['sh', '-c', script, 'pack', ...args]);
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
    const done = child.exited.then((exit) => {
      if (exit.code !== 0) throw new Error(`packing failed (${exit.signal ?? exit.code}): ${stderr.trim()}`);
    });
    done.catch(() => {});
    return { stream: child.stdout!, done };
  }

  /**
   * Writes the stream to the file (created or replaced) as a whole or not at all: into a
   * temporary file beside it, which takes the old file's mode and then its place (`mode` applied
   * when given). When the client goes away mid-body the write is cut off and the temporary file
   * removed; when the write fails, the rest of the body is still read, so the client gets the
   * error answer instead of a connection cut mid-body.
   */
  async write(path: string, input: Readable, mode?: string): Promise<void> {
    let temp: string | undefined;
    try {
      temp = `${path.slice(0, path.lastIndexOf('/') + 1)}.rbrowse-write-${randomBytes(6).toString('hex')}`;
      // Missing parent directories are made first, as Kernel's write_file does.
      const script = 'mkdir -p -- "$(dirname -- "$2")" && cat > "$1" && { chmod --reference="$2" "$1" 2>/dev/null; true; }';
      const child = this.spawn(['sh', '-c', script, 'write_file', temp, path], {
        stdin: 'pipe',
      });
      // The upload is piped by hand, so a failed write never destroys it.
      child.stdin!.on('error', () => input.unpipe(child.stdin!));
      let cut = false;
      const cutOff = () => {
        if (!input.readableEnded) {
          cut = true;
          child.kill('SIGKILL');
        }
      };
      input.once('error', cutOff).once('close', cutOff);
      input.pipe(child.stdin!);
      const done = await outputOf(child);
      input.off('error', cutOff).off('close', cutOff);
      if (cut) throw new BadRequestError(`${path}: the upload ended before its last byte; nothing was written`);
      try {
        this.outcome(done, path);
      } catch (err) {
        // mkdir -p fails with "File exists" only when a component of the path is a file.
        if (err instanceof ConflictError) throw BadRequestError.field('path', `${path}: a component is not a directory`);
        throw err;
      }
      if (mode) await this.run(['chmod', mode, '--', temp], path);
      await this.run(['mv', '-f', '-T', '--', temp, path], path);
      temp = undefined;
    } catch (err) {
      if (temp) await outputOf(this.spawn(['rm', '-f', '--', temp])).catch(() => {});
      if (!input.readableEnded && !input.destroyed) {
        input.resume();
        await Promise.race([once(input, 'end'), once(input, 'close'), sleep(30_000)]).catch(() => {});
      }
      throw err;
    }
  }
}

/** The zip of an empty directory (zip(1) makes none: "nothing to do"). */
async function emptyZip(): Promise<Readable> {
  const mod = (await import('archiver')) as unknown as { default: (format: string) => import('archiver').Archiver };
  const zip = mod.default('zip');
  void zip.finalize();
  return zip;
}

/**
 * The output of a reader (cat) once its first bytes, or its end, have come: a reader that fails
 * before writing anything (permission denied) is the caller's error, raised before any answer
 * is sent; one that fails later ends the stream with an error, so the answer is cut, not complete.
 */
async function streamOrError(child: BoxProcess, path: string): Promise<Readable> {
  const out = new PassThrough();
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const first = new Promise<'data' | 'end'>((resolve) => {
    child.stdout!.once('data', (chunk: Buffer) => {
      // Held until piped below: the agent's messages come in batches, and a chunk emitted while
      // nothing listens would be lost (a short answer under its full content-length).
      child.stdout!.pause();
      out.write(chunk);
      resolve('data');
    });
    child.stdout!.once('end', () => resolve('end'));
  });
  const how = await first;
  const exit = child.exited;
  if (how === 'end') {
    const { code } = await exit;
    if (code !== 0) throw toApiError(stderr, path);
    out.end();
    return out;
  }
  child.stdout!.pipe(out, { end: false });
  void Promise.all([exit, new Promise((r) => child.stdout!.once('end', r))]).then(([{ code }]) => {
    if (code === 0) out.end();
    else out.destroy(toApiError(stderr, path));
  });
  return out;
}
