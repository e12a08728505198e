import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Kernel, { toFile } from '@onkernel/sdk';
import { execa } from 'execa';
import { chromium } from 'playwright';
import { CLI, sleep, startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';
import { startFixtureServer } from './helpers/fixtures.js';
import { zipOf, zipSlipping } from './helpers/zip.js';
import { diskOf } from './helpers/box.js';

let d: TestDaemon;
let fixtures: Awaited<ReturnType<typeof startFixtureServer>>;
before(async () => {
  d = await startTestDaemon();
  fixtures = await startFixtureServer();
});
after(async () => {
  await fixtures?.close();
  await d?.stop();
});

async function session(body: object = { headless: true }): Promise<string> {
  const res = await d.api('POST', '/browsers', body);
  assert.equal(res.status, 200, res.text);
  return res.body.session_id;
}
const fs = (id: string, op: string, body: object) => d.api('PUT', `/browsers/${id}/fs/${op}`, body);
const q = (path: string) => `path=${encodeURIComponent(path)}`;
const info = (id: string, path: string) => d.api('GET', `/browsers/${id}/fs/file_info?${q(path)}`);
async function write(id: string, path: string, content: string | Buffer, mode?: string) {
  const res = await fetch(`${d.baseUrl}/browsers/${id}/fs/write_file?${q(path)}${mode ? `&mode=${mode}` : ''}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${d.apiKey}`, 'content-type': 'application/octet-stream' },
    body: typeof content === 'string' ? content : new Uint8Array(content),
  });
  return res.status;
}
function formOf(zip: Buffer | undefined, dest: string): FormData {
  const form = new FormData();
  form.append('dest_path', dest);
  if (zip) form.append('zip_file', new Blob([new Uint8Array(zip)]), 'upload.zip');
  return form;
}
async function zipFile(zip: Buffer): Promise<string> {
  const path = join(d.home, `cli-${Date.now()}.zip`);
  await writeFile(path, zip);
  return path;
}
async function read(id: string, path: string) {
  const res = await fetch(`${d.baseUrl}/browsers/${id}/fs/read_file?${q(path)}`, { headers: { authorization: `Bearer ${d.apiKey}` } });
  return { status: res.status, text: await res.text() };
}
describe('filesystem inside a session', () => {
  test('create_directory is recursive and idempotent, mode default 755', async () => {
    const id = await session();
    assert.equal((await fs(id, 'create_directory', { path: '/home/kernel/a/b/c' })).status, 204);
    assert.equal((await fs(id, 'create_directory', { path: '/home/kernel/a/b/c' })).status, 204, 'idempotent');
    assert.equal((await info(id, '/home/kernel/a/b/c')).body.mode, '0755');
    assert.equal((await info(id, '/home/kernel/a/b/c')).body.is_dir, true);
    assert.equal((await fs(id, 'create_directory', { path: '/tmp/private', mode: '0700' })).status, 204);
    assert.equal((await info(id, '/tmp/private')).body.mode, '0700');
    await d.api('DELETE', `/browsers/${id}`);
  });

  test('delete_directory is recursive, succeeds when missing, removes a plain file too', async () => {
    const id = await session();
    await fs(id, 'create_directory', { path: '/home/kernel/tree/sub' });
    assert.equal(await write(id, '/home/kernel/tree/sub/f.txt', 'x'), 204);
    assert.equal((await fs(id, 'delete_directory', { path: '/home/kernel/tree' })).status, 204);
    assert.equal((await info(id, '/home/kernel/tree')).status, 404);
    assert.equal((await fs(id, 'delete_directory', { path: '/home/kernel/never-was' })).status, 204);
    assert.equal(await write(id, '/tmp/plain.txt', 'x'), 204);
    assert.equal((await fs(id, 'delete_directory', { path: '/tmp/plain.txt' })).status, 204);
    assert.equal((await info(id, '/tmp/plain.txt')).status, 404);
    assert.equal((await fs(id, 'delete_directory', { path: '/home/kernel' })).status, 400, 'a session root stays');
    await d.api('DELETE', `/browsers/${id}`);
  });

  test('set_file_permissions: mode required, owner and group best-effort, missing path 404', async () => {
    const id = await session();
    assert.equal(await write(id, '/tmp/p.txt', 'x'), 204);
    assert.equal((await fs(id, 'set_file_permissions', { path: '/tmp/p.txt', mode: '640' })).status, 204);
    assert.equal((await info(id, '/tmp/p.txt')).body.mode, '0640');
    const owned = await fs(id, 'set_file_permissions', { path: '/tmp/p.txt', mode: '600', owner: 'nobody', group: '65534' });
    assert.equal(owned.status, 204);
    assert.equal((await fs(id, 'set_file_permissions', { path: '/tmp/p.txt' })).status, 400, 'mode is required');
    assert.equal((await fs(id, 'set_file_permissions', { path: '/tmp/none.txt', mode: '600' })).status, 404);
    await d.api('DELETE', `/browsers/${id}`);
  });

  test('relative paths, `..` and bad modes are 400 naming the field', async () => {
    const id = await session();
    const cases: [string, object, string][] = [
      ['create_directory', { path: 'relative/dir' }, 'path'],
      ['create_directory', { path: '/home/kernel/../../etc' }, 'path'],
      ['create_directory', { path: '/tmp/x', mode: '999' }, 'mode'],
      ['create_directory', { path: '/tmp/x', mode: 'rwx' }, 'mode'],
      ['create_directory', {}, 'path'],
      ['set_file_permissions', { path: '/tmp', mode: '12' }, 'mode'],
      ['move', { src_path: '/tmp/a', dest_path: 'b' }, 'dest_path'],
      ['delete_file', { path: '' }, 'path'],
    ];
    for (const [op, body, field] of cases) {
      const res = await fs(id, op, body);
      assert.equal(res.status, 400, `${op} ${JSON.stringify(body)}: ${res.text}`);
      assert.equal(res.body.code, 'bad_request');
      assert.ok(
        res.body.details.some((x: any) => x.message.startsWith(field)),
        `${field} named: ${res.text}`,
      );
    }
    assert.equal((await d.api('GET', `/browsers/${id}/fs/list_files?path=tmp`)).status, 400);
    await d.api('DELETE', `/browsers/${id}`);
  });

  test('write, read, list, info, move and delete_file', async () => {
    const id = await session();
    const big = Buffer.alloc(3 * 1024 * 1024, 7);
    assert.equal(await write(id, '/home/kernel/big.bin', big, '600'), 204);
    const res = await fetch(`${d.baseUrl}/browsers/${id}/fs/read_file?${q('/home/kernel/big.bin')}`, {
      headers: { authorization: `Bearer ${d.apiKey}` },
    });
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(big));
    const i = (await info(id, '/home/kernel/big.bin')).body;
    assert.deepEqual([i.name, i.path, i.size_bytes, i.is_dir, i.mode], ['big.bin', '/home/kernel/big.bin', big.length, false, '0600']);
    assert.ok(Math.abs(Date.parse(i.mod_time) - Date.now()) < 60_000);
    assert.equal((await fs(id, 'move', { src_path: '/home/kernel/big.bin', dest_path: '/tmp/moved.bin' })).status, 204);
    const listed = (await d.api('GET', `/browsers/${id}/fs/list_files?${q('/tmp')}`)).body.map((f: any) => f.name);
    assert.ok(listed.includes('moved.bin'), String(listed));
    assert.equal((await read(id, '/home/kernel/big.bin')).status, 404);
    assert.equal((await fs(id, 'delete_file', { path: '/tmp/moved.bin' })).status, 204);
    assert.equal((await fs(id, 'delete_file', { path: '/tmp/moved.bin' })).status, 404);
    assert.equal((await fs(id, 'delete_file', { path: '/home/kernel/Downloads' })).status, 400, 'not a file');
    assert.equal((await read(id, '/home/kernel/Downloads')).status, 400, 'a directory is not read as a file');
    // Missing parent directories are made, as Kernel's write_file does; a parent that is a file is a 400 naming no tool.
    assert.equal(await write(id, '/home/kernel/new/deeper/file.txt', 'made'), 204);
    assert.equal((await read(id, '/home/kernel/new/deeper/file.txt')).text, 'made');
    const underFile = await fetch(`${d.baseUrl}/browsers/${id}/fs/write_file?${q('/home/kernel/new/deeper/file.txt/x')}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${d.apiKey}`, 'content-type': 'application/octet-stream' },
      body: 'x',
    });
    assert.equal(underFile.status, 400);
    assert.doesNotMatch(await underFile.text(), /sh:|mkdir|cat|rbrowse-write/);
    await d.api('DELETE', `/browsers/${id}`);
  });

  test('sessions are isolated from each other, and another org sees no session', async () => {
    const a = await session();
    const b = await session();
    assert.equal(await write(a, '/home/kernel/secret.txt', 'from a'), 204);
    assert.equal((await read(b, '/home/kernel/secret.txt')).status, 404);
    assert.equal((await read(a, '/home/kernel/secret.txt')).text, 'from a');
    const other = (await d.cli(['auth', 'create-key', '--org', 'fs-other'])).stdout.trim();
    const res = await d.api('GET', `/browsers/${a}/fs/list_files?${q('/home/kernel')}`, undefined, other);
    assert.equal(res.status, 404);
    await d.api('DELETE', `/browsers/${a}`);
    await d.api('DELETE', `/browsers/${b}`);
  });

  test('escapes: planted symlinks, races and read-only system paths never reach outside the session', async () => {
    const a = await session();
    const b = await session();
    const exec = async (id: string, script: string) => {
      const r = await d.api('POST', `/browsers/${id}/process/exec`, { command: 'sh', args: ['-c', script] });
      assert.equal(r.status, 200, r.text);
      return r.body;
    };
    // What a compromised page could plant in its own home: links to the host's /etc, to session
    // b's home as the host has it (found in /proc/mounts, as any local user could), and to the
    // daemon's home.
    const bHome = `${await diskOf(b)}/home`;
    await exec(a, `ln -s /etc /home/kernel/to-etc && ln -s '${bHome}' /home/kernel/to-b && ln -s '${d.home}' /home/kernel/to-rbrowse-home`);
    assert.equal(await write(b, '/home/kernel/b-secret.txt', 'b only'), 204);

    assert.equal(await write(a, '/home/kernel/to-etc/evil', 'x'), 403, 'the host is read-only');
    assert.equal(existsSync('/etc/evil'), false);
    const viaLink = await read(a, '/home/kernel/to-b/b-secret.txt');
    assert.equal(viaLink.status, 404, `session b's files are out of sight: ${viaLink.text}`);
    assert.equal((await d.api('GET', `/browsers/${a}/fs/list_files?${q('/home/kernel/to-rbrowse-home')}`)).status, 404);
    assert.notEqual(await write(a, '/home/kernel/to-b/planted.txt', 'x'), 204);
    assert.equal(existsSync(join(bHome, 'planted.txt')), false);

    // A host directory of the system, which a session sees read-only: removing it is refused (4xx).
    const outside = `/usr/local/share/rbrowse-fs-test-${process.pid}`;
    await mkdir(outside, { recursive: true });
    await writeFile(join(outside, 'keep.txt'), 'keep');
    try {
      const del = await fs(a, 'delete_directory', { path: outside });
      assert.ok(del.status >= 400 && del.status < 500, `refused with a 4xx, got ${del.status}`);
      assert.ok(existsSync(join(outside, 'keep.txt')));
      assert.equal((await fs(a, 'create_directory', { path: '/usr/rbrowse-nope' })).status, 403);
      assert.equal(existsSync('/usr/rbrowse-nope'), false);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }

    // Race: the page flips a path between a directory and a link to session b while writes go on.
    const flipper = await d.api('POST', `/browsers/${a}/process/spawn`, {
      command: 'sh',
      args: [
        '-c',
        `while :; do rm -rf /home/kernel/race; mkdir /home/kernel/race; rm -rf /home/kernel/race; ln -s '${bHome}' /home/kernel/race; done`,
      ],
    });
    assert.equal(flipper.status, 200, flipper.text);
    try {
      for (let i = 0; i < 30; i++) await write(a, `/home/kernel/race/raced-${i}.txt`, 'x');
    } finally {
      await d.api('POST', `/browsers/${a}/process/${flipper.body.process_id}/kill`, { signal: 'KILL' });
    }
    assert.deepEqual(
      (await readdir(bHome)).filter((f) => f.startsWith('raced-')),
      [],
      'nothing landed in b',
    );
    await d.api('DELETE', `/browsers/${a}`);
    await d.api('DELETE', `/browsers/${b}`);
  });

  test('upload (official SDK, multipart) and download_dir_zip', async () => {
    const id = await session();
    const kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
    await kernel.browsers.fs.upload(id, {
      files: [
        { dest_path: '/home/kernel/up/a.txt', file: await toFile(Buffer.from('file A'), 'a.txt') },
        { dest_path: '/home/kernel/up/deeper/b.bin', file: await toFile(Buffer.alloc(200_000, 9), 'b.bin') },
      ],
    });
    assert.equal((await read(id, '/home/kernel/up/a.txt')).text, 'file A');
    assert.equal((await info(id, '/home/kernel/up/deeper/b.bin')).body.size_bytes, 200_000);
    // No temporary upload files are left behind in the session.
    const tmp = (await d.api('GET', `/browsers/${id}/fs/list_files?${q('/tmp')}`)).body.map((f: any) => f.name);
    assert.deepEqual(
      tmp.filter((n: string) => n.startsWith('.rbrowse-upload')),
      [],
    );

    // The Python SDK's encoding: no index, the n-th file goes with the n-th dest_path.
    const python = new FormData();
    python.append('files[][dest_path]', '/home/kernel/py/one.txt');
    python.append('files[][dest_path]', '/home/kernel/py/two.txt');
    python.append('files[][file]', new Blob(['first']), 'one.txt');
    python.append('files[][file]', new Blob(['second']), 'two.txt');
    const fromPython = await fetch(`${d.baseUrl}/browsers/${id}/fs/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${d.apiKey}` },
      body: python,
    });
    assert.equal(fromPython.status, 204, await fromPython.text());
    assert.deepEqual([(await read(id, '/home/kernel/py/one.txt')).text, (await read(id, '/home/kernel/py/two.txt')).text], ['first', 'second']);

    const noDest = new FormData();
    noDest.append('files[0][file]', new Blob(['x']), 'x.txt');
    const refused = await fetch(`${d.baseUrl}/browsers/${id}/fs/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${d.apiKey}` },
      body: noDest,
    });
    assert.equal(refused.status, 400);
    assert.match(JSON.stringify(await refused.json()), /dest_path/);

    // A destination the session may not write is refused naming it, never the staging file it came through.
    const readOnly = new FormData();
    readOnly.append('files[0][dest_path]', '/usr/share/not-mine.txt');
    readOnly.append('files[0][file]', new Blob(['x']), 'x.txt');
    const forbidden = await fetch(`${d.baseUrl}/browsers/${id}/fs/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${d.apiKey}` },
      body: readOnly,
    });
    const forbiddenBody = await forbidden.text();
    assert.equal(forbidden.status, 403, forbiddenBody);
    assert.match(forbiddenBody, /\/usr\/share\/not-mine\.txt: read-only or not permitted/);
    assert.doesNotMatch(forbiddenBody, /rbrowse-upload/);

    const zip = await fetch(`${d.baseUrl}/browsers/${id}/fs/download_dir_zip?${q('/home/kernel/up')}`, {
      headers: { authorization: `Bearer ${d.apiKey}` },
    });
    assert.equal(zip.status, 200);
    assert.equal(zip.headers.get('content-type'), 'application/zip');
    const bytes = Buffer.from(await zip.arrayBuffer());
    assert.equal(bytes.subarray(0, 4).toString('latin1'), 'PK\x03\x04');
    for (const name of ['a.txt', 'deeper/b.bin']) assert.ok(bytes.includes(name), `${name} in the zip`);
    assert.equal((await d.api('GET', `/browsers/${id}/fs/download_dir_zip?${q('/home/kernel/up/a.txt')}`)).status, 400);
    await d.api('DELETE', `/browsers/${id}`);
  });

  test('an unreadable file is a 403 at once, never a 200 that hangs; a directory zip that cannot be completed is an error, links in it stay links', async () => {
    const id = await session();
    try {
      const exec = (script: string) => d.api('POST', `/browsers/${id}/process/exec`, { command: 'sh', args: ['-c', script] });
      await exec(
        'mkdir -p /home/kernel/z/in && echo hidden > /home/kernel/z/secret && chmod 000 /home/kernel/z/secret && echo ok > /home/kernel/z/in/ok.txt && ln -s /etc/passwd /home/kernel/z/in/link',
      );
      const started = Date.now();
      const unreadable = await read(id, '/home/kernel/z/secret');
      assert.equal(unreadable.status, 403, unreadable.text);
      assert.equal(JSON.parse(unreadable.text).code, 'forbidden');
      assert.ok(Date.now() - started < 10_000, 'answered at once');
      // Control: a readable file beside it reads.
      assert.deepEqual(await read(id, '/home/kernel/z/in/ok.txt'), { status: 200, text: 'ok\n' });

      const zipOfDir = (path: string) =>
        fetch(`${d.baseUrl}/browsers/${id}/fs/download_dir_zip?${q(path)}`, { headers: { authorization: `Bearer ${d.apiKey}` } });
      const broken = await zipOfDir('/home/kernel/z');
      assert.equal(broken.status, 403, 'a zip holding an unreadable file is refused, not cut short');
      assert.equal((await broken.json()).code, 'forbidden');
      const whole = await zipOfDir('/home/kernel/z/in');
      assert.equal(whole.status, 200);
      const bytes = Buffer.from(await whole.arrayBuffer());
      assert.ok(bytes.includes('ok.txt'));
      // The link is stored as a link (its target's name), never followed to the host's file.
      assert.ok(bytes.includes('/etc/passwd'), 'the link target is stored');
      assert.ok(!bytes.includes('root:x:0:0'), "the link's target's content is not");
    } finally {
      await d.api('DELETE', `/browsers/${id}`);
    }
  });

  test('upload_zip (official SDK): extracted into dest_path inside the session; escapes, links and bombs refused, nothing left', async () => {
    const id = await session();
    const kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
    const zip = await zipOf([
      { name: 'top.txt', data: 'top' },
      { name: 'dir/inner.txt', data: 'inner' },
      { name: 'dir/empty/', data: '' },
    ]);
    await kernel.browsers.fs.uploadZip(id, { dest_path: '/home/kernel/unzipped', zip_file: await toFile(zip, 'a.zip') });
    assert.equal((await read(id, '/home/kernel/unzipped/top.txt')).text, 'top');
    assert.equal((await read(id, '/home/kernel/unzipped/dir/inner.txt')).text, 'inner');
    assert.equal((await info(id, '/home/kernel/unzipped/dir/empty')).body.is_dir, true);
    // Into an existing directory, over what is there.
    await kernel.browsers.fs.uploadZip(id, {
      dest_path: '/home/kernel/unzipped',
      zip_file: await toFile(await zipOf([{ name: 'top.txt', data: 'again' }]), 'b.zip'),
    });
    assert.equal((await read(id, '/home/kernel/unzipped/top.txt')).text, 'again');

    // A symlink the page planted at the destination still lands inside the session.
    await fs(id, 'create_directory', { path: '/tmp/real' });
    const planted = await kernel.browsers.process.exec(id, { command: 'ln', args: ['-s', '/etc', '/home/kernel/etc-link'] });
    assert.equal(planted.exit_code, 0);
    const refusedWrite = await fetch(`${d.baseUrl}/browsers/${id}/fs/upload_zip`, {
      method: 'POST',
      headers: { authorization: `Bearer ${d.apiKey}` },
      body: formOf(await zipOf([{ name: 'x.txt', data: 'x' }]), '/home/kernel/etc-link'),
    });
    assert.equal(refusedWrite.status, 403, 'the read-only system stays read-only');

    const cases: [string, Buffer, RegExp][] = [
      ['zip-slip ../', await zipSlipping('evil.txt', [{ name: 'ok.txt', data: 'ok' }]), /relative path|\.\./],
      ['a symlink', await zipOf([{ name: 'link', symlinkTo: '/etc/passwd' }]), /symbolic link/],
      ['a zip bomb', await zipOf([{ name: 'big.bin', data: Buffer.alloc(20 * 1024 ** 2) }]), /bomb/],
      ['not a zip', Buffer.from('not a zip at all'), /not a readable zip/],
    ];
    for (const [what, bytes, why] of cases) {
      const res = await fetch(`${d.baseUrl}/browsers/${id}/fs/upload_zip`, {
        method: 'POST',
        headers: { authorization: `Bearer ${d.apiKey}` },
        body: formOf(bytes, '/tmp/bad'),
      });
      const body = await res.json();
      assert.equal(res.status, 400, `${what}: ${JSON.stringify(body)}`);
      assert.match(JSON.stringify(body), why, what);
    }
    assert.equal((await info(id, '/tmp/bad')).status, 404, 'nothing of a refused zip was written');
    assert.equal((await info(id, '/tmp/evil.txt')).status, 404);
    for (const [form, field] of [
      [formOf(zip, 'relative/path'), 'dest_path'],
      [formOf(undefined, '/tmp/x'), 'zip_file'],
    ] as const) {
      const res = await fetch(`${d.baseUrl}/browsers/${id}/fs/upload_zip`, {
        method: 'POST',
        headers: { authorization: `Bearer ${d.apiKey}` },
        body: form,
      });
      assert.equal(res.status, 400);
      assert.match(JSON.stringify(await res.json()), new RegExp(field));
    }
    // The staging directories on the daemon's side are gone.
    assert.deepEqual(
      readdirSync(join(d.home, 'sessions', id)).filter((n) => n.startsWith('upload-zip-')),
      [],
    );

    const cli = await d.cli(['fs', 'upload-zip', id, await zipFile(zip), '/tmp/from-cli']);
    assert.equal(cli.exitCode, 0, cli.stderr);
    assert.equal((await read(id, '/tmp/from-cli/dir/inner.txt')).text, 'inner');
    await d.api('DELETE', `/browsers/${id}`);
  });

  test('watch (official SDK): files written through the API and by a process, recursion, renames and deletes; stop ends the stream', async () => {
    const id = await session();
    const kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
    await fs(id, 'create_directory', { path: '/home/kernel/watched' });
    const { watch_id } = await kernel.browsers.fs.watch.start(id, { path: '/home/kernel/watched', recursive: true });
    assert.match(watch_id!, /^[a-z0-9]{24}$/);
    // Changes before anyone reads are kept for the first reader. (The API writes a temporary file
    // and renames it into place, so its file appears at once, whole: a CREATE, no WRITE.)
    assert.equal(await write(id, '/home/kernel/watched/api.txt', 'by the api'), 204);
    const seen: any[] = [];
    const stream = await kernel.browsers.fs.watch.events(watch_id!, { id });
    const reading = (async () => {
      for await (const ev of stream as AsyncIterable<any>) seen.push(ev);
    })();
    const has =
      (type: string, path: string, isDir = false) =>
      () =>
        seen.some((e) => e.type === type && e.path === path && e.is_dir === isDir);
    await waitFor(has('CREATE', '/home/kernel/watched/api.txt'), 10_000, 'the API write');
    // At once, in one go: what is made in a new directory before inotify watches it is found too.
    await kernel.browsers.process.exec(id, {
      command: 'sh',
      args: [
        '-c',
        'mkdir -p /home/kernel/watched/sub/deeper && echo x > /home/kernel/watched/sub/proc.txt && echo y > /home/kernel/watched/sub/deeper/d.txt',
      ],
    });
    await waitFor(has('CREATE', '/home/kernel/watched/sub', true), 10_000, 'the new directory');
    await waitFor(has('CREATE', '/home/kernel/watched/sub/proc.txt'), 10_000, 'a file written by a process in it (recursion)');
    await waitFor(has('CREATE', '/home/kernel/watched/sub/deeper/d.txt'), 10_000, 'a file two new directories down');
    assert.equal(seen.filter((e) => e.type === 'CREATE' && e.path === '/home/kernel/watched/sub/proc.txt').length, 1, 'reported once');
    await kernel.browsers.process.exec(id, { command: 'sh', args: ['-c', 'echo more >> /home/kernel/watched/api.txt'] });
    await waitFor(has('WRITE', '/home/kernel/watched/api.txt'), 10_000, 'a write to a watched file');
    assert.equal((await fs(id, 'move', { src_path: '/home/kernel/watched/sub/proc.txt', dest_path: '/home/kernel/watched/moved.txt' })).status, 204);
    await waitFor(has('RENAME', '/home/kernel/watched/sub/proc.txt'), 10_000, 'the rename');
    await waitFor(has('CREATE', '/home/kernel/watched/moved.txt'), 10_000, 'the new name');
    assert.equal((await fs(id, 'delete_file', { path: '/home/kernel/watched/moved.txt' })).status, 204);
    await waitFor(has('DELETE', '/home/kernel/watched/moved.txt'), 10_000, 'the delete');
    // Made again at once: a new CREATE, not taken for the one before.
    await kernel.browsers.process.exec(id, { command: 'sh', args: ['-c', 'echo again > /home/kernel/watched/moved.txt'] });
    await waitFor(
      () => seen.filter((e) => e.type === 'CREATE' && e.path === '/home/kernel/watched/moved.txt').length === 2,
      10_000,
      'the second CREATE',
    );
    const ev = seen.find((e) => e.path === '/home/kernel/watched/api.txt');
    assert.deepEqual(Object.keys(ev).sort(), ['event', 'is_dir', 'name', 'path', 'type']);
    assert.equal(ev.name, 'api.txt');

    await kernel.browsers.fs.watch.stop(watch_id!, { id });
    await reading; // the stream ended with the watch
    assert.equal((await d.api('DELETE', `/browsers/${id}/fs/watch/${watch_id}`)).status, 404);
    assert.equal((await d.api('POST', `/browsers/${id}/fs/watch`, { path: '/home/kernel/nope' })).status, 404);
    assert.equal((await d.api('POST', `/browsers/${id}/fs/watch`, { path: 'relative' })).status, 400);
    const key = (await d.cli(['auth', 'create-key', '--org', 'watch-other'])).stdout.trim();
    assert.equal((await d.api('POST', `/browsers/${id}/fs/watch`, { path: '/tmp' }, key)).status, 404);

    // CLI: prints changes until interrupted, then stops its watch.
    const cli = execa(CLI, ['fs', 'watch', id, '/tmp', '--json'], { env: d.env, reject: false });
    let out = '';
    cli.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    // The CLI's watch starts once Node has started and the daemon answered: until then a change is
    // not seen, so a new file is written until one is printed.
    let n = 0;
    await waitFor(
      async () => {
        assert.equal(await write(id, `/tmp/cli-seen-${n++}.txt`, 'x'), 204);
        await sleep(500);
        return /"\/tmp\/cli-seen-\d+\.txt"/.test(out);
      },
      30_000,
      'the CLI to print a change',
    );
    cli.kill('SIGINT');
    await cli;
    await d.api('DELETE', `/browsers/${id}`);
  });

  for (const headless of [true, false]) {
    test(`a real download appears through the API, and an API-written file fills a file input (${headless ? 'headless' : 'headful'})`, async () => {
      const id = await session({ headless, viewport: { width: 1024, height: 768 } });
      const s = (await d.api('GET', `/browsers/${id}`)).body;
      const browser = await chromium.connectOverCDP(s.cdp_ws_url);
      try {
        const page = browser.contexts()[0]!.pages()[0]!;
        await page.goto(`${fixtures.url}/files.html`);
        const cdp = await browser.newBrowserCDPSession();
        await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: '/home/kernel/Downloads' });
        await page.click('#download');
        const listed = await waitFor(
          async () => {
            const files = (await d.api('GET', `/browsers/${id}/fs/list_files?${q('/home/kernel/Downloads')}`)).body;
            return files.find((f: any) => f.name === 'report.txt' && f.size_bytes > 0);
          },
          15_000,
          'the download to appear',
        );
        assert.equal(listed.path, '/home/kernel/Downloads/report.txt');
        assert.equal((await read(id, '/home/kernel/Downloads/report.txt')).text, 'quarterly numbers\n');

        assert.equal(await write(id, '/tmp/upload.txt', 'written through the API'), 204);
        const pageCdp = await page.context().newCDPSession(page);
        const { root } = await pageCdp.send('DOM.getDocument');
        const { nodeId } = await pageCdp.send('DOM.querySelector', { nodeId: root.nodeId, selector: '#file' });
        await pageCdp.send('DOM.setFileInputFiles', { nodeId, files: ['/tmp/upload.txt'] });
        await page.waitForFunction(() => document.getElementById('content')!.textContent === 'written through the API');
      } finally {
        await browser.close();
        await d.api('DELETE', `/browsers/${id}`);
      }
    });
  }
});
