// Deployments from a git repository (Kernel's `source`), fetched by git in the build's box from a
// real git server: git's own smart HTTP (`git http-backend`) behind a small HTTP server on the
// host's loopback, one repository public and one that wants a token.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Kernel from '@onkernel/sdk';
import { execa } from 'execa';
import { startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';

const TOKEN = 'ghp_test-token-for-the-private-repo';
const APP = `import Kernel from '@onkernel/sdk';
const app = new Kernel().app('from-git');
app.action('where', async (_ctx) => ({ from: 'git' }));
`;

interface GitServer {
  url: string;
  /** Requests for the private repository, and whether each carried the token. */
  privateRequests: { authorized: boolean }[];
  close(): Promise<void>;
}

/** A bare repository with the app under `app/` on branch main (and a tag), made with git itself. */
async function makeRepo(root: string, name: string): Promise<string> {
  const work = join(root, `${name}-work`);
  await mkdir(join(work, 'app'), { recursive: true });
  await writeFile(join(work, 'app', 'index.mjs'), APP);
  await writeFile(join(work, 'app', 'package.json'), JSON.stringify({ name: 'from-git', version: '1.0.0', type: 'module' }));
  await writeFile(join(work, 'README.md'), 'not the app\n');
  const git = (args: string[], cwd = work) =>
    execa('git', args, { cwd, env: { GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@x', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@x' } });
  await git(['init', '-q', '-b', 'main']);
  await git(['add', '.']);
  await git(['commit', '-q', '-m', 'the app']);
  await git(['tag', 'v1']);
  const bare = join(root, `${name}.git`);
  await git(['clone', '-q', '--bare', work, bare], root);
  return (await git(['rev-parse', 'HEAD'])).stdout.trim();
}

/** git's smart HTTP: each request handed to `git http-backend` as CGI. `private.git` wants the token. */
async function startGitServer(root: string): Promise<GitServer> {
  const privateRequests: { authorized: boolean }[] = [];
  const expected = `Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`;
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://git.local');
    if (url.pathname.startsWith('/private.git')) {
      const authorized = req.headers.authorization === expected;
      privateRequests.push({ authorized });
      if (!authorized) {
        res.writeHead(401, { 'www-authenticate': 'Basic realm="git"' }).end();
        return;
      }
    }
    const cgi = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method ?? 'GET',
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        ...(req.headers['content-length'] ? { CONTENT_LENGTH: String(req.headers['content-length']) } : {}),
        REMOTE_ADDR: '127.0.0.1',
        ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
        ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: String(req.headers['content-encoding']) } : {}),
      },
    });
    req.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let headersDone = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) return void res.write(chunk);
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      headersDone = true;
      let status = 200;
      for (const line of head.subarray(0, end).toString().split('\r\n')) {
        const [k, ...v] = line.split(':');
        if (k!.toLowerCase() === 'status') status = Number.parseInt(v.join(':').trim(), 10);
        else res.setHeader(k!, v.join(':').trim());
      }
      res.writeHead(status);
      res.write(head.subarray(end + 4));
    });
    cgi.stdout.on('end', () => res.end());
    cgi.on('error', () => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    privateRequests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('deployments from a git repository (source)', () => {
  let d: TestDaemon;
  let kernel: Kernel;
  let root: string;
  let git: GitServer;
  let commit: string;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'rbrowse-git-'));
    commit = await makeRepo(root, 'public');
    await makeRepo(root, 'private');
    git = await startGitServer(root);
    d = await startTestDaemon();
    kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0, timeout: 180_000 });
  });
  after(async () => {
    try {
      await d?.stop();
    } finally {
      await git?.close();
      await rm(root, { recursive: true, force: true });
    }
  });

  const settle = (id: string) =>
    waitFor(
      async () => {
        const dep = await kernel.deployments.retrieve(id);
        return ['running', 'failed', 'stopped'].includes(dep.status) ? dep : undefined;
      },
      180_000,
      `deployment ${id} to settle`,
    );

  const run = async () => {
    const r = await kernel.invocations.create({ app_name: 'from-git', version: 'latest', action_name: 'where' });
    const done = await waitFor(
      async () => {
        const now = await kernel.invocations.retrieve(r.id);
        return now.status === 'succeeded' || now.status === 'failed' ? now : undefined;
      },
      120_000,
      'the invocation',
    );
    return { status: done!.status, output: done!.output ? JSON.parse(done!.output) : undefined };
  };

  test('a branch of a public repository, a subdirectory of it: fetched, built and run; the source answered', async () => {
    const created = await kernel.deployments.create({
      source: { type: 'github', url: `${git.url}/public.git`, ref: 'main', path: 'app', entrypoint: 'index.mjs' },
    } as never);
    assert.equal(created.source_type, 'github');
    assert.deepEqual([created.source_url, created.source_ref, created.source_path], [`${git.url}/public.git`, 'main', 'app']);
    assert.equal(created.entrypoint_rel_path, 'index.mjs');
    const dep = (await settle(created.id))!;
    // A failed fetch shows git's own output, from the deployment's events.
    const events = dep.status === 'running' ? '' : (await d.api('GET', `/deployments/${created.id}/events`)).text;
    assert.equal(dep.status, 'running', `${dep.status_reason ?? ''}\n${events}`);
    assert.match(dep.source_checksum ?? '', /^[0-9a-f]{64}$/, 'the fetched tree is hashed');
    assert.deepEqual(await run(), { status: 'succeeded', output: { from: 'git' } });
  });

  test('a private repository: the token reaches the git server and nothing else; without it the deployment fails saying so', async () => {
    const withToken = await kernel.deployments.create({
      version: 'private',
      source: {
        type: 'github',
        url: `${git.url}/private.git`,
        ref: 'v1',
        path: 'app',
        entrypoint: 'index.mjs',
        auth: { method: 'github_token', token: TOKEN },
      },
    } as never);
    assert.equal((await settle(withToken.id))!.status, 'running');
    assert.ok(
      git.privateRequests.some((r) => r.authorized),
      'the git server got the token',
    );
    // The token is kept nowhere: not in the state file, not in the deployment's events.
    const state = await readFile(join(d.home, 'state.json'), 'utf8');
    assert.ok(!state.includes(TOKEN) && !state.includes(Buffer.from(`x-access-token:${TOKEN}`).toString('base64')));
    const events = (await d.api('GET', `/deployments/${withToken.id}/events`)).text;
    assert.ok(!events.includes(TOKEN));

    // Control: the same fetch without the token is turned away by the server, and the deployment says what failed.
    const before = git.privateRequests.length;
    const without = await kernel.deployments.create({
      version: 'private-2',
      source: { type: 'github', url: `${git.url}/private.git`, ref: 'v1', path: 'app', entrypoint: 'index.mjs' },
    } as never);
    const failed = (await settle(without.id))!;
    assert.equal(failed.status, 'failed');
    assert.match(failed.status_reason ?? '', /fetching .*private\.git at v1 failed/);
    assert.ok(git.privateRequests.slice(before).every((r) => !r.authorized) && git.privateRequests.length > before);
  });

  test('a commit by its SHA; a ref, directory or entrypoint that is not there fails the deployment naming it', async () => {
    const bySha = await kernel.deployments.create({
      version: 'sha',
      source: { type: 'github', url: `${git.url}/public.git`, ref: commit, path: 'app', entrypoint: 'index.mjs' },
    } as never);
    assert.equal((await settle(bySha.id))!.status, 'running');
    const cases: [object, RegExp][] = [
      [{ ref: 'no-such-branch', path: 'app', entrypoint: 'index.mjs' }, /fetching .* at no-such-branch failed/],
      [{ ref: 'main', path: 'elsewhere', entrypoint: 'index.mjs' }, /the repository has no directory elsewhere at main/],
      [{ ref: 'main', entrypoint: 'index.mjs' }, /index\.mjs is not a file in the repository \(its top level: .*app\//],
    ];
    for (const [fields, reason] of cases) {
      const dep = await kernel.deployments.create({ version: 'bad', source: { type: 'github', url: `${git.url}/public.git`, ...fields } } as never);
      const failed = (await settle(dep.id))!;
      assert.equal(failed.status, 'failed', JSON.stringify(fields));
      assert.match(failed.status_reason ?? '', reason);
    }
  });
});
