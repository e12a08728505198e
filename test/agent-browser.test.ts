/**
 * Vercel's agent-browser (npm `agent-browser`, its own binary) with its Kernel provider pointed at
 * the daemon (KERNEL_ENDPOINT), unchanged: open a page, snapshot, fill and click by ref, read text,
 * close; with a profile (KERNEL_PROFILE_NAME) and stealth as it asks for them. Its requests are
 * the spec: whatever it sends, the daemon takes.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { execa } from 'execa';
import { ROOT, startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';
import { startFixtureServer, type FixtureServer } from './helpers/fixtures.js';

const AGENT_BROWSER = join(ROOT, 'node_modules', '.bin', 'agent-browser');

let d: TestDaemon;
let pages: FixtureServer;
let home: string;
before(async () => {
  d = await startTestDaemon();
  pages = await startFixtureServer();
  home = await mkdtemp(join(tmpdir(), 'rbrowse-agent-browser-'));
});
after(async () => {
  // agent-browser keeps a background process per session: none of this test's may outlive it.
  for (const pid of await processesWithHome(home)) process.kill(pid, 'SIGKILL');
  await pages?.close();
  await d?.stop();
  await rm(home, { recursive: true, force: true });
});

/** Processes whose environment names this test's HOME (agent-browser's own). */
async function processesWithHome(dir: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const environ = await readFile(`/proc/${entry}/environ`, 'latin1').catch(() => '');
    if (environ.split('\0').includes(`HOME=${dir}`)) pids.push(Number(entry));
  }
  return pids;
}

async function agentBrowser(args: string[], env: Record<string, string>): Promise<string> {
  const r = await execa(AGENT_BROWSER, ['-p', 'kernel', ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: home, KERNEL_ENDPOINT: d.baseUrl, KERNEL_API_KEY: d.apiKey, ...env },
    extendEnv: false,
    reject: false,
    timeout: 120_000,
  });
  assert.equal(r.exitCode, 0, `agent-browser ${args.join(' ')}: ${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** The ref agent-browser's snapshot gives the element of that role and name (`[ref=e3]`, used as @e3). */
function refOf(snapshot: string, role: string, name: string): string {
  const m = new RegExp(`${role} "${name}"[^\\n]*\\[ref=([^\\]]+)\\]`).exec(snapshot);
  assert.ok(m, `no ${role} "${name}" in:\n${snapshot}`);
  return `@${m[1]}`;
}

test("agent-browser's Kernel provider runs its whole loop on rbrowse, with a profile and stealth", async () => {
  // Kernel asks for a profile to exist before a browser loads it; agent-browser names it.
  assert.equal((await d.api('POST', '/profiles', { name: 'agent-profile' })).status, 200);
  const env = { AGENT_BROWSER_SESSION: 'rbrowse-test', KERNEL_HEADLESS: 'true', KERNEL_STEALTH: 'true', KERNEL_PROFILE_NAME: 'agent-profile' };
  await agentBrowser(['open', `${pages.url}/agent-form.html?agent=ab`], env);
  const [session] = (await d.api('GET', '/browsers')).body as {
    session_id: string;
    stealth: boolean;
    headless: boolean;
    profile?: { name: string };
  }[];
  assert.ok(session, 'a session of the daemon');
  assert.deepEqual([session.stealth, session.headless, session.profile?.name], [true, true, 'agent-profile']);

  const snapshot = await agentBrowser(['snapshot', '-i'], env);
  await agentBrowser(['fill', refOf(snapshot, 'textbox', 'Name'), 'Grace'], env);
  await agentBrowser(['click', refOf(snapshot, 'button', 'Greet')], env);
  assert.equal((await agentBrowser(['get', 'text', '#out'], env)).trim(), 'Hello, Grace (small)!');
  assert.match(await agentBrowser(['get', 'title'], env), /Agent form/);
  await agentBrowser(['close'], env);
  // Its close ends the session (DELETE), as on Kernel.
  await waitFor(async () => ((await d.api('GET', '/browsers')).body as unknown[]).length === 0, 30_000, 'the session to end');
  const ended = (await d.api('GET', `/browsers/${session.session_id}`)).body;
  assert.match(ended.message, /was deleted at /);
});
