import { ZipArchive } from 'archiver';

export interface Entry {
  name: string;
  data?: string | Buffer;
  symlinkTo?: string;
}

/** A zip made with archiver: listed entries, or a fixture extension's directory (under `prefix`, if given). */
export async function zipOf(content: Entry[] | { dir: string; prefix?: string }): Promise<Buffer> {
  const archive = new ZipArchive({ zlib: { level: 9 } });
  const chunks: Buffer[] = [];
  archive.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<void>((resolve, reject) => {
    archive.on('end', resolve);
    archive.on('error', reject);
  });
  if (Array.isArray(content)) {
    for (const e of content) {
      if (e.symlinkTo) archive.symlink(e.name, e.symlinkTo);
      else archive.append(e.data ?? '', { name: e.name });
    }
  } else archive.directory(content.dir, content.prefix ?? false);
  await archive.finalize();
  await done;
  return Buffer.concat(chunks);
}

/** A zip with an entry archiver will not write (it normalizes names): `../name`, renamed in the bytes (names are not checksummed). */
export async function zipSlipping(name: string, others: Entry[] = []): Promise<Buffer> {
  const placeholder = `xx/${name}`;
  const zip = await zipOf([...others, { name: placeholder, data: 'evil' }]);
  return Buffer.from(zip.toString('latin1').replaceAll(placeholder, `../${name}`), 'latin1');
}
