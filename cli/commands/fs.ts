import { createReadStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { Command } from 'commander';
import { clientFor } from '../context.js';
import { age, printFields, printJson, printTable } from '../output.js';

/** `rbrowse fs ...`: the filesystem API, with paths as the session's browser sees them. */
export function fsCommand(): Command {
  const fs = new Command('fs').description("files inside a session (/home/kernel and /tmp are the session's own)");
  fs.command('mkdir')
    .description('create a directory (recursive, idempotent)')
    .argument('<id>', 'session id or name')
    .argument('<path>', 'absolute path')
    .option('--mode <mode>', 'octal mode', '755')
    .addHelpText('after', '\nExample:\n  rbrowse fs mkdir my-session /home/kernel/work')
    .action(async (id: string, path: string, o, cmd: Command) => {
      await (await clientFor(cmd)).call('fsCreateDirectory', { params: { id }, body: { path, mode: o.mode } });
    });
  fs.command('rmdir')
    .description('delete a directory recursively (no error when missing)')
    .argument('<id>', 'session id or name')
    .argument('<path>', 'absolute path')
    .action(async (id: string, path: string, _o, cmd: Command) => {
      await (await clientFor(cmd)).call('fsDeleteDirectory', { params: { id }, body: { path } });
    });
  fs.command('rm')
    .description('delete a file')
    .argument('<id>', 'session id or name')
    .argument('<path>', 'absolute path')
    .action(async (id: string, path: string, _o, cmd: Command) => {
      await (await clientFor(cmd)).call('fsDeleteFile', { params: { id }, body: { path } });
    });
  fs.command('mv')
    .description('move or rename')
    .argument('<id>', 'session id or name')
    .argument('<src>', 'absolute source path')
    .argument('<dest>', 'absolute destination path')
    .action(async (id: string, src: string, dest: string, _o, cmd: Command) => {
      await (await clientFor(cmd)).call('fsMove', { params: { id }, body: { src_path: src, dest_path: dest } });
    });
  fs.command('chmod')
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
  fs.command('ls')
    .description('list a directory')
    .argument('<id>', 'session id or name')
    .argument('[path]', 'absolute path', '/home/kernel')
    .option('--json', 'print the API objects')
    .action(async (id: string, path: string, o, cmd: Command) => {
      const files = await (await clientFor(cmd)).call('fsListFiles', { params: { id }, query: { path } });
      if (o.json) return printJson(files);
      printTable(
        ['MODE', 'SIZE', 'MODIFIED', 'NAME'],
        files.map((f) => [f.mode, String(f.size_bytes), `${age(f.mod_time)} ago`, f.is_dir ? `${f.name}/` : f.name]),
      );
    });
  fs.command('stat')
    .description('information about a file or directory')
    .argument('<id>', 'session id or name')
    .argument('<path>', 'absolute path')
    .option('--json', 'print the API object')
    .action(async (id: string, path: string, o, cmd: Command) => {
      const f = await (await clientFor(cmd)).call('fsFileInfo', { params: { id }, query: { path } });
      if (o.json) printJson(f);
      else printFields(Object.entries(f));
    });
  fs.command('cat')
    .description("print a file's bytes")
    .argument('<id>', 'session id or name')
    .argument('<path>', 'absolute path')
    .action(async (id: string, path: string, _o, cmd: Command) => {
      const bytes = await (await clientFor(cmd)).call('fsReadFile', { params: { id }, query: { path } });
      process.stdout.write(bytes as Buffer);
    });
  fs.command('get')
    .description('download a file')
    .argument('<id>', 'session id or name')
    .argument('<path>', 'absolute path in the session')
    .requiredOption('-o, --output <file>', 'local file to write')
    .addHelpText('after', '\nExample:\n  rbrowse fs get my-session /home/kernel/Downloads/report.pdf -o report.pdf')
    .action(async (id: string, path: string, o, cmd: Command) => {
      const bytes = await (await clientFor(cmd)).call('fsReadFile', { params: { id }, query: { path } });
      await writeFile(o.output, bytes as Buffer);
    });
  fs.command('put')
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
  return fs;
}
