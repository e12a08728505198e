import { existsSync, openAsBlob, statSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { basename, join, relative, resolve } from 'node:path';
import { Command, Option } from 'commander';
import type { Extension } from '../../src/api/extensions.js';
import type { RbrowseClient } from '../../src/client.js';
import { zipFiles } from '../app-zip.js';
import { clientFor } from '../context.js';
import { saveDownload } from '../download.js';
import { covers } from '../operations.js';
import { age, printFields, printJson, printList } from '../output.js';
import { listPages } from '../paging.js';
import { formatBytes, withProgress } from '../progress.js';
import { count } from '../arg-parsers.js';
import { deleteEach } from '../delete-each.js';

function printExtension(e: Extension): void {
  printFields([
    ['id', e.id],
    ['name', e.name],
    ['size', formatBytes(e.size_bytes)],
    ['sha256', e.checksum],
    ['created_at', e.created_at],
    ['last_used_at', e.last_used_at],
  ]);
}

const show = (o: { json?: boolean }, e: Extension) => (o.json ? printJson(e) : printExtension(e));

/**
 * What `upload` sends: a zip as it is, or a directory holding manifest.json zipped with its
 * files at the root. Symbolic links are left out (the daemon refuses them) and named on stderr.
 */
async function uploadFile(path: string, cmd: Command): Promise<File> {
  if (!existsSync(path)) cmd.error(`error: ${path} does not exist`);
  const type = 'application/zip';
  if (!statSync(path).isDirectory()) return new File([await openAsBlob(path)], basename(path), { type });
  if (!existsSync(join(path, 'manifest.json'))) cmd.error(`error: ${path} has no manifest.json: not an unpacked extension`);
  const files: string[] = [];
  for (const e of await readdir(path, { recursive: true, withFileTypes: true })) {
    const rel = relative(path, join(e.parentPath, e.name));
    if (e.isFile()) files.push(rel);
    else if (e.isSymbolicLink()) process.stderr.write(`skipping symbolic link ${rel}\n`);
  }
  const zip = await zipFiles(path, files.sort());
  return new File([new Uint8Array(zip)], `${basename(resolve(path))}.zip`, { type });
}

export function extensionsCommand(): Command {
  const extensions = new Command('extensions').description('Chromium extensions sessions can load (rbrowse create --extension NAME)');
  covers(extensions.command('upload'), 'uploadExtension')
    .alias('create')
    .description('upload an unpacked extension: its directory (zipped for you) or a zip of it')
    .argument('<dir|zip>', 'a directory holding manifest.json, or a zip with manifest.json at its root or in its one folder')
    .option('--name <name>', "a name unique among your extensions ([A-Za-z0-9._-]); default: the manifest's name")
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExamples:\n  rbrowse extensions upload ./my-extension --name my-ext\n  rbrowse create --extension my-ext')
    .action(async (path: string, o, cmd: Command) => {
      const file = await uploadFile(path, cmd);
      const client = await clientFor(cmd);
      const body = { file, ...(o.name ? { name: o.name } : {}) };
      const upload = () => client.call('uploadExtension', { body });
      show(o, await withProgress(`uploading ${file.name} (${formatBytes(file.size)})`, upload, { quiet: o.json }));
    });
  covers(extensions.command('load'), 'loadBrowserExtensions')
    .description('load extensions into a running session, for it alone (its browser restarts in place; CDP clients reconnect)')
    .argument('<id>', 'session id or name')
    .argument('<dir|zip...>', 'directories holding manifest.json, or zips of them; each is named after its file')
    .addHelpText('after', '\nExample:\n  rbrowse extensions load my-session ./my-extension ./other.zip')
    .action(async (id: string, paths: string[], _o, cmd: Command) => {
      const form = new FormData();
      const files = await Promise.all(paths.map((p) => uploadFile(p, cmd)));
      files.forEach((file, i) => {
        form.append(
          `extensions[${i}][name]`,
          file.name
            .replace(/\.zip$/i, '')
            .replace(/[^A-Za-z0-9._-]+/g, '-')
            .replace(/^[^A-Za-z0-9]+/, '') || `extension-${i}`,
        );
        form.append(`extensions[${i}][zip_file]`, file);
      });
      const client = await clientFor(cmd);
      const size = files.reduce((n, f) => n + f.size, 0);
      await withProgress(`loading ${files.length} extension(s) (${formatBytes(size)}) and restarting the browser`, () =>
        client.call('loadBrowserExtensions', { params: { id }, body: form }),
      );
    });
  covers(extensions.command('list'), 'listExtensions')
    .alias('ls')
    .description('list extensions, newest first (every page, unless --limit or --offset)')
    .option('--name <name>', 'only the extension of this name')
    .option('--query <text>', 'extensions whose name contains this (or whose id is this)')
    .option('--limit <n>', 'one page of this size, 1..100', count)
    .option('--offset <n>', 'one page, skipping this many', count)
    .option('--json', 'print the API objects')
    .option('-q, --quiet', 'print extension ids only')
    .addHelpText('after', '\nExample:\n  rbrowse extensions ls -q | xargs rbrowse extensions rm')
    .action(async (o, cmd: Command) => {
      const client = await clientFor(cmd);
      const items = await listPages(o, (page) =>
        client.request('listExtensions', { query: { ...(o.name ? { name: o.name } : {}), ...(o.query ? { query: o.query } : {}), ...page } }),
      );
      printList(items, o, {
        id: (e) => e.id,
        headers: ['EXTENSION', 'NAME', 'SIZE', 'AGE', 'LAST USED'],
        row: (e) => [e.id, e.name ?? '', formatBytes(e.size_bytes), age(e.created_at), e.last_used_at ? age(e.last_used_at) : ''],
      });
    });
  covers(extensions.command('get'), 'getExtension')
    .description("show an extension's metadata")
    .argument('<extension>', 'extension id or name')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse extensions get my-ext --json')
    .action(async (ext: string, o, cmd: Command) => show(o, await (await clientFor(cmd)).call('getExtension', { params: { id: ext } })));
  covers(extensions.command('download'), 'downloadExtension')
    .description('save the zip an extension was uploaded as')
    .argument('<extension>', 'extension id or name')
    .option('-o, --output <file>', 'where to write it ("-": standard output; default NAME.zip)')
    .addHelpText('after', '\nExample:\n  rbrowse extensions download my-ext -o - | zipinfo /dev/stdin')
    .action(async (ext: string, o, cmd: Command) => {
      const res = await (await clientFor(cmd)).open('downloadExtension', { params: { id: ext } });
      await saveDownload(`downloading extension ${ext}`, res, o.output ?? `${ext}.zip`);
    });
  covers(extensions.command('delete'), 'deleteExtension')
    .alias('rm')
    .description('delete extensions (running sessions keep theirs)')
    .argument('<extensions...>', 'extension ids or names')
    .addHelpText('after', '\nExample:\n  rbrowse extensions delete my-ext')
    .action(async (ids: string[], _o, cmd: Command) => {
      const client = await clientFor(cmd);
      await deleteEach(ids, (id) => client.call('deleteExtension', { params: { id } }));
    });
  covers(extensions.command('from-chrome-store'), 'downloadExtensionFromChromeStore')
    .description('fetch an extension from the Chrome Web Store as a zip (the daemon needs internet access)')
    .argument('<url>', 'its Chrome Web Store URL, or its 32-letter id')
    .addOption(new Option('--os <os>', 'the platform to fetch it for').choices(['linux', 'mac', 'win']).default('linux'))
    .option('-o, --output <file>', 'where to write it ("-": standard output; default ID.zip)')
    .addHelpText(
      'after',
      '\nExample:\n  rbrowse extensions from-chrome-store https://chromewebstore.google.com/detail/x/<id> -o ext.zip\n  rbrowse extensions upload ext.zip',
    )
    .action(async (url: string, o, cmd: Command) => {
      const res = await (await clientFor(cmd)).open('downloadExtensionFromChromeStore', { query: { url, os: o.os } });
      const named = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1];
      await saveDownload('fetching from the Chrome Web Store', res, o.output ?? (named ? basename(named) : 'extension.zip'));
    });
  return extensions;
}

/** The create body's `extensions` for `--extension` values: each looked up first, so an id or a name works. */
export async function extensionSelections(client: RbrowseClient, refs: string[]): Promise<{ id: string }[]> {
  return Promise.all(refs.map(async (ref) => ({ id: (await client.call('getExtension', { params: { id: ref } })).id })));
}
