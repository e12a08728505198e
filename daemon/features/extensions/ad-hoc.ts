import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { BadRequestError } from '../../../src/errors.js';
import { receiveZipPart } from '../../lib/archive/receive-zip.js';
import { tarOf } from '../../lib/archive/tar-stream.js';
import { extractZip } from '../../lib/archive/unzip.js';
import { removeTree } from '../../lib/fs-util.js';
import { formEntry, type FormPart } from '../../lib/form-entries.js';
import type { FeatureLaunch } from '../../sessions/features.js';
import type { LiveSession } from '../../sessions/live-session.js';
import { MAX_UPLOAD_BYTES, SESSION_EXTENSIONS_DIR, UNZIP_LIMITS } from './extensions.js';
import { extensionsLaunch } from './loaded.js';
import { readManifest, type FoundManifest } from './manifest.js';

const MAX_EXTENSIONS = 20;
/** A name becomes a directory in the session: /home/kernel/extensions/<name>. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/;

/**
 * POST /browsers/{id}/extensions (Kernel's loadExtensions): unpacked extensions sent with the
 * request (`extensions[i][name]`, `extensions[i][zip_file]`), for this session alone (they are not
 * stored as the org's extensions). Each zip is received and extracted beside the session (outside
 * its namespace) under the same rules as an upload to /extensions, and its manifest checked,
 * before anything of the running session is touched. The returned step, run while Chromium is
 * stopped for its restart, unpacks them into /home/kernel/extensions/<name> (a name sent again
 * replaces that extension) and gives the flags that load them.
 */
export async function receiveSessionExtensions(
  session: LiveSession,
  parts: AsyncIterable<FormPart>,
  log: (msg: string) => void,
): Promise<{ load: () => Promise<FeatureLaunch[]>; discard: () => Promise<void> }> {
  const work = await mkdtemp(join(session.dirs.root, '.extensions-upload-'));
  const discard = () => removeTree(work);
  try {
    const names = new Map<number, string>();
    const roots = new Map<number, FoundManifest>();
    const seen = new Map<string, number>();
    for await (const part of parts) {
      const entry = formEntry(part.fieldname, 'extensions', ['name', 'zip_file'] as const, seen);
      if (!entry || entry.index >= MAX_EXTENSIONS) {
        part.file?.resume();
        throw BadRequestError.field(
          part.fieldname,
          `is not a field of this form (extensions[i][name], extensions[i][zip_file]; at most ${MAX_EXTENSIONS})`,
        );
      }
      const field = `extensions.${entry.index}.${entry.key}`;
      if (entry.key === 'name') {
        const name = String(part.value ?? '');
        if (part.file || !NAME.test(name)) {
          part.file?.resume();
          throw BadRequestError.field(field, 'must be a name of letters, digits, ".", "_" and "-" (a directory in the session)');
        }
        names.set(entry.index, name);
        continue;
      }
      if (!part.file) throw BadRequestError.field(field, 'must be a file part (a zip of the unpacked extension)');
      if (roots.has(entry.index)) {
        part.file.resume();
        throw BadRequestError.field(field, 'is given twice');
      }
      const zip = join(work, `${entry.index}.zip`);
      await receiveZipPart(part.file, zip, MAX_UPLOAD_BYTES, field);
      const dir = join(work, String(entry.index));
      await extractZip(zip, dir, field, UNZIP_LIMITS);
      await removeTree(zip);
      const found = await readManifest(dir);
      // Known before any restart: Chromium 139 and later skip these without a word.
      if (found.manifest.manifest_version === 2)
        throw BadRequestError.field(field, 'manifest_version 2: this Chromium no longer runs such extensions');
      roots.set(entry.index, found);
    }
    if (roots.size === 0) throw BadRequestError.field('extensions', 'at least one extension is required (extensions[i][zip_file])');
    for (const index of [...names.keys(), ...roots.keys()]) {
      if (!names.has(index)) throw BadRequestError.field(`extensions.${index}.name`, 'is required');
      if (!roots.has(index)) throw BadRequestError.field(`extensions.${index}.zip_file`, 'is required');
    }
    const byName = new Map([...names].map(([index, name]) => [name, index]));
    if (byName.size !== names.size) throw BadRequestError.field('extensions', 'each extension needs a name of its own');
    return {
      discard,
      // Written inside the session's namespace as its user: its code has run in /home/kernel,
      // where the daemon, as root, must not follow whatever links it left there.
      load: async () => {
        const toLoad = [];
        for (const [name, index] of byName) {
          const dest = `${SESSION_EXTENSIONS_DIR}/${name}`;
          await session.files.deleteDirectory(dest);
          await session.files.unpack(dest, await tarOf(roots.get(index)!.root));
          const manifestVersion = roots.get(index)!.manifest.manifest_version;
          toLoad.push({ path: dest, field: `extensions.${index}`, label: `extension "${name}"`, manifestVersion });
        }
        return [extensionsLaunch(toLoad, log)];
      },
    };
  } catch (err) {
    await discard();
    throw err;
  }
}
