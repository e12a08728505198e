import { createReadStream, openAsBlob } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import type { RbrowseClient } from '../../src/client.js';
import { apiError } from '../api-error.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { age, printFields, printJson, printList } from '../output.js';
import { followUntilInterrupted } from '../sse.js';

/** `LOCAL:DEST` pairs of `fs upload`. */
function uploadPair(value: string, previous: { local: string; dest: string }[] = []) {
  const i = value.lastIndexOf(':');
  if (i < 1 || !value.slice(i + 1).startsWith('/')) throw new InvalidArgumentError('expected LOCAL_FILE:/absolute/dest/path');
  return [...previous, { local: value.slice(0, i), dest: value.slice(i + 1) }];
}

/**
 * POST .../fs/upload as Kernel's SDKs send it (files[i][file], files[i][dest_path]); fetch's
 * FormData sets the multipart boundary, which the typed client's raw bodies cannot.
 */
async function upload(client: RbrowseClient, id: string, files: { local: string; dest: string }[]): Promise<void> {
  const form = new FormData();
  for (const [i, f] of files.entries()) {
    form.append(`files[${i}][file]`, await openAsBlob(f.local), basename(f.local));
    form.append(`files[${i}][dest_path]`, f.dest);
  }
  const res = await fetch(new URL(`/browsers/${encodeURIComponent(id)}/fs/upload`, client.baseUrl), {
    method: 'POST',
    headers: client.authHeaders(),
    body: form,
  });
  if (!res.ok) throw apiError(res.status, await res.text());
  await res.body?.cancel();
}

/** POST .../fs/upload_zip as the SDK sends it (zip_file, dest_path). */
async function uploadZipFile(client: RbrowseClient, id: string, zip: string, dest: string): Promise<void> {
  const form = new FormData();
  form.append('dest_path', dest);
  form.append('zip_file', await openAsBlob(zip), basename(zip));
  const res = await fetch(new URL(`/browsers/${encodeURIComponent(id)}/fs/upload_zip`, client.baseUrl), {
    method: 'POST',
    headers: client.authHeaders(),
    body: form,
  });
  if (!res.ok) throw apiError(res.status, await res.text());
  await res.body?.cancel();
}

/** `rbrowse fs ...`: the filesystem API, with paths as the session's browser sees them. */
export function fsCommand(): Command {
  const fs = new Command('fs').description("files inside a session (/home/kernel and /tmp are the session's own)");
  covers(fs.command('mkdir'), 'fsCreateDirectory')
    .description('create a directory (recursive, idempotent)')
    .argument('<id>', 'session id or name')
    .argument('<path>', 'absolute path')
    .option('--mode <mode>', 'octal mode', '755')
    .addHelpText('after', '\nExample:\n  rbrowse fs mkdir my-session /home/kernel/work')
    .action(async (id: string, path: string, o, cmd: Command) => {
      await (await clientFor(cmd)).call('fsCreateDirectory', { params: { id }, body: { path, mode: o.mode } });
    });
  covers(fs.command('rmdir'), 'fsDeleteDirectory')
    .description('delete a directory recursively (no error when missing)')
    .argument('<id>', 'session id or name')
    .argument('<path>', 'absolute path')
    .addHelpText('after', '\nExample:\n  rbrowse fs rmdir my-session /home/kernel/work')
    .action(async (id: string, path: string, _o, cmd: Command) => {
      await (await clientFor(cmd)).call('fsDeleteDirectory', { params: { id }, body: { path } });
    });
  covers(fs.command('rm'), 'fsDeleteFile')
    .description('delete a file')
    .argument('<id>', 'session id or name')
    .argument('<path>', 'absolute path')
    .addHelpText('after', '\nExample:\n  rbrowse fs rm my-session /tmp/data.csv')
    .action(async (id: string, path: string, _o, cmd: Command) => {
      await (await clientFor(cmd)).call('fsDeleteFile', { params: { id }, body: { path } });
    });
  covers(fs.command('mv'), 'fsMove')
    .description('move or rename')
    .argument('<id>', 'session id or name')
    .argument('<src>', 'absolute source path')
    .argument('<dest>', 'absolute destination path')
    .addHelpText('after', '\nExample:\n  rbrowse fs mv my-session /tmp/a.txt /home/kernel/a.txt')
    .action(async (id: string, src: string, dest: string, _o, cmd: Command) => {
      await (await clientFor(cmd)).call('fsMove', { params: { id }, body: { src_path: src, dest_path: dest } });
    });
  covers(fs.command('chmod'), 'fsSetFilePermissions')
    .description('set permissions (owner and group best-effort)')
    .argument('<id>', 'session id or name')
    .argument('<mode>', 'octal mode, e.g. 644')
    .argument('<path>', 'absolute path')
    .option('--owner <user>', 'user name or id')
    .option('--group <group>', 'group name or id')
    .addHelpText('after', '\nExample:\n  rbrowse fs chmod my-session 600 /home/kernel/key.pem')
    .action(async (id: string, mode: string, path: string, o, cmd: Command) => {
      await (await clientFor(cmd)).call('fsSetFilePermissions', {
        params: { id },
        body: { path, mode, ...(o.owner ? { owner: o.owner } : {}), ...(o.group ? { group: o.group } : {}) },
      });
    });
  covers(fs.command('ls'), 'fsListFiles')
    .description('list a directory')
    .argument('<id>', 'session id or name')
    .argument('[path]', 'absolute path', '/home/kernel')
    .option('--json', 'print the API objects')
    .option('-q, --quiet', 'print paths only')
    .addHelpText('after', '\nExample:\n  rbrowse fs ls my-session /home/kernel/Downloads')
    .action(async (id: string, path: string, o, cmd: Command) => {
      const files = await (await clientFor(cmd)).call('fsListFiles', { params: { id }, query: { path } });
      printList(files, o, {
        id: (f) => f.path,
        headers: ['MODE', 'SIZE', 'MODIFIED', 'NAME'],
        row: (f) => [f.mode, String(f.size_bytes), `${age(f.mod_time)} ago`, f.is_dir ? `${f.name}/` : f.name],
      });
    });
  covers(fs.command('stat'), 'fsFileInfo')
    .description('information about a file or directory')
    .argument('<id>', 'session id or name')
    .argument('<path>', 'absolute path')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse fs stat my-session /home/kernel/Downloads --json')
    .action(async (id: string, path: string, o, cmd: Command) => {
      const f = await (await clientFor(cmd)).call('fsFileInfo', { params: { id }, query: { path } });
      if (o.json) printJson(f);
      else printFields(Object.entries(f));
    });
  covers(fs.command('cat'), 'fsReadFile')
    .description("print a file's bytes")
    .argument('<id>', 'session id or name')
    .argument('<path>', 'absolute path')
    .addHelpText('after', '\nExample:\n  rbrowse fs cat my-session /tmp/notes.txt')
    .action(async (id: string, path: string, _o, cmd: Command) => {
      const bytes = await (await clientFor(cmd)).call('fsReadFile', { params: { id }, query: { path } });
      process.stdout.write(bytes as Buffer);
    });
  covers(fs.command('get'), 'fsReadFile')
    .description('download a file')
    .argument('<id>', 'session id or name')
    .argument('<path>', 'absolute path in the session')
    .requiredOption('-o, --output <file>', 'local file to write')
    .addHelpText('after', '\nExample:\n  rbrowse fs get my-session /home/kernel/Downloads/report.pdf -o report.pdf')
    .action(async (id: string, path: string, o, cmd: Command) => {
      const bytes = await (await clientFor(cmd)).call('fsReadFile', { params: { id }, query: { path } });
      await writeFile(o.output, bytes as Buffer);
    });
  covers(fs.command('put'), 'fsWriteFile')
    .description('upload a local file')
    .argument('<id>', 'session id or name')
    .argument('<file>', 'local file')
    .argument('<path>', 'absolute path in the session')
    .option('--mode <mode>', 'octal mode of the written file')
    .addHelpText('after', '\nExample:\n  rbrowse fs put my-session ./fixture.csv /tmp/fixture.csv')
    .action(async (id: string, file: string, path: string, o, cmd: Command) => {
      await (await clientFor(cmd)).call('fsWriteFile', {
        params: { id },
        query: { path, ...(o.mode ? { mode: o.mode } : {}) },
        body: createReadStream(file),
      });
    });
  covers(fs.command('watch'), 'fsWatchStart', 'fsWatchEvents', 'fsWatchStop')
    .description('print changes under a path as they happen, until interrupted (the watch is then stopped)')
    .argument('<id>', 'session id or name')
    .argument('<path>', 'absolute path of a directory or file')
    .option('--recursive', 'subdirectories too')
    .option('--json', 'print each event as a JSON line')
    .addHelpText('after', '\nExample:\n  rbrowse fs watch my-session /home/kernel/Downloads --recursive')
    .action(async (id: string, path: string, o, cmd: Command) => {
      const client = await clientFor(cmd);
      const { watch_id } = await client.call('fsWatchStart', { params: { id }, body: { path, ...(o.recursive ? { recursive: true } : {}) } });
      const url = new URL(`/browsers/${encodeURIComponent(id)}/fs/watch/${encodeURIComponent(watch_id)}/events`, client.baseUrl);
      type FsEvent = { event: string; type: string; path: string; is_dir: boolean };
      try {
        await followUntilInterrupted<FsEvent>(url.href, client.authHeaders(), (ev) => {
          if (ev.event === 'fs_event') console.log(o.json ? JSON.stringify(ev) : `${ev.type.padEnd(6)} ${ev.path}${ev.is_dir ? '/' : ''}`);
        });
      } finally {
        await client.call('fsWatchStop', { params: { id, watch_id } }).catch(() => {});
      }
    });
  covers(fs.command('upload-zip'), 'fsUploadZip')
    .description('upload a local zip and extract it into a directory of the session (created if missing)')
    .argument('<id>', 'session id or name')
    .argument('<zip>', 'local zip file')
    .argument('<dest_path>', 'absolute directory in the session')
    .addHelpText('after', '\nExample:\n  rbrowse fs upload-zip my-session ./fixtures.zip /home/kernel/fixtures')
    .action(async (id: string, zip: string, dest: string, _o, cmd: Command) => {
      await uploadZipFile(await clientFor(cmd), id, zip, dest);
    });
  covers(fs.command('upload'), 'fsUpload')
    .description('upload local files in one multipart request (parents are created)')
    .argument('<id>', 'session id or name')
    .argument('<files...>', 'LOCAL_FILE:/absolute/dest/path pairs', uploadPair)
    .addHelpText('after', '\nExample:\n  rbrowse fs upload my-session ./a.csv:/tmp/a.csv ./b.png:/home/kernel/b.png')
    .action(async (id: string, files: { local: string; dest: string }[], _o, cmd: Command) => {
      await upload(await clientFor(cmd), id, files);
    });
  covers(fs.command('zip'), 'fsDownloadDirZip')
    .description("download a zip of a directory's contents")
    .argument('<id>', 'session id or name')
    .argument('<path>', 'absolute path of the directory')
    .requiredOption('-o, --output <file>', 'local zip file to write')
    .addHelpText('after', '\nExample:\n  rbrowse fs zip my-session /home/kernel/Downloads -o downloads.zip')
    .action(async (id: string, path: string, o, cmd: Command) => {
      const bytes = await (await clientFor(cmd)).call('fsDownloadDirZip', { params: { id }, query: { path } });
      await writeFile(o.output, bytes as Buffer);
    });
  return fs;
}
