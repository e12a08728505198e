/**
 * Agents at work: N agents at once (1, then 8), each a loop of navigate, snapshot, type by ref,
 * click by ref, snapshot on a local page, through rbrowse's MCP (streamable HTTP, each agent on
 * its connection's own session), against the same loop through @playwright/mcp (its own server
 * process over stdio, as agents run it) on a raw Chromium each, in the same run. Prints actions a
 * second per agent and in all, p50/p90 of each tool, and what of each action is Playwright MCP's
 * own settling wait (the raw side again with `timeouts.settle: 0`).
 *
 *   npm run bench:agents [-- --loops 5]
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startTestDaemon } from '../test/helpers/daemon.js';
import { startFixtureServer } from '../test/helpers/fixtures.js';
import { headlessBuild, load, progress, runBench } from './lifecycle.js';
import { RawChromiums } from './raw.js';
import { percentile, textTable } from './stats.js';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const LOOPS = arg('--loops', 5);
const STEPS = ['browser_navigate', 'browser_snapshot', 'browser_type', 'browser_click', 'browser_snapshot#2'] as const;
type Timings = Record<(typeof STEPS)[number], number[]>;

const refOf = (snapshot: string, role: string, name: string) => new RegExp(`${role} "${name}"[^\\n]*\\[ref=([^\\]]+)\\]`).exec(snapshot)?.[1];
const textOf = (a: unknown) => ((a as { content: { text?: string }[] }).content ?? []).map((c) => c.text ?? '').join('\n');

/** One agent's loops; the time of each step, and the errors it met. */
async function agentLoops(client: Client, pageUrl: string, t: Timings): Promise<{ actions: number; errors: string[]; ms: number }> {
  const errors: string[] = [];
  let actions = 0;
  const started = performance.now();
  const step = async (key: (typeof STEPS)[number], args: Record<string, unknown>) => {
    const s = performance.now();
    const answer = await client.callTool({ name: key.replace(/#\d$/, ''), arguments: args }, undefined, { timeout: 120_000 });
    t[key].push(performance.now() - s);
    actions++;
    if ((answer as { isError?: boolean }).isError) errors.push(`${key}: ${textOf(answer).slice(0, 200)}`);
    return textOf(answer);
  };
  for (let i = 0; i < LOOPS; i++) {
    await step('browser_navigate', { url: `${pageUrl}?agent=${i}` });
    const snap = await step('browser_snapshot', {});
    const box = refOf(snap, 'textbox', 'Name');
    const button = refOf(snap, 'button', 'Greet');
    if (!box || !button) {
      errors.push(`no refs in the snapshot: ${snap.slice(0, 400)}`);
      continue;
    }
    await step('browser_type', { element: 'Name', target: box, text: `agent ${i}` });
    await step('browser_click', { element: 'Greet', target: button });
    const after = await step('browser_snapshot#2', {});
    if (!after.includes(`Hello, agent ${i}`)) errors.push('the click did not greet');
  }
  return { actions, errors, ms: performance.now() - started };
}

const empty = (): Timings => Object.fromEntries(STEPS.map((s) => [s, []])) as unknown as Timings;

interface SideResult {
  perAgent: number;
  total: number;
  errors: number;
  t: Timings;
}

async function runAgents(
  n: number,
  connect: (i: number) => Promise<{ client: Client; close: () => Promise<void> }>,
  pageUrl: string,
): Promise<SideResult> {
  const agents = await Promise.all(Array.from({ length: n }, (_, i) => connect(i)));
  const t = empty();
  try {
    // One untimed loop each first: the browser's and the server's first page cost nothing here.
    await Promise.all(agents.map((a) => agentLoops(a.client, pageUrl, empty())));
    const started = performance.now();
    const runs = await Promise.all(agents.map((a) => agentLoops(a.client, pageUrl, t)));
    const wall = (performance.now() - started) / 1000;
    const actions = runs.reduce((s, r) => s + r.actions, 0);
    for (const r of runs) for (const e of r.errors.slice(0, 3)) progress(`error: ${e}`);
    return {
      perAgent: runs.reduce((s, r) => s + r.actions / (r.ms / 1000), 0) / n,
      total: actions / wall,
      errors: runs.reduce((s, r) => s + r.errors.length, 0),
      t,
    };
  } finally {
    await Promise.all(agents.map((a) => a.close()));
  }
}

runBench(async (cleanups) => {
  const loadBefore = load();
  const pages = await startFixtureServer();
  cleanups.push(() => pages.close());
  const pageUrl = `${pages.url}/agent-form.html`;
  progress('daemon (standby: 8 headless browsers, so each agent’s own session is ready)');
  const d = await startTestDaemon({ env: { RBROWSE_STANDBY: 'headless=8', RBROWSE_STANDBY_BURST_MB: '0' } });
  cleanups.push(() => d.stop());
  const raws = await RawChromiums.create(headlessBuild());
  cleanups.push(async () => void (await raws.disposeAll()));
  const work = await mkdtemp(join(tmpdir(), 'rbrowse-bench-agents-'));
  cleanups.push(() => rm(work, { recursive: true, force: true }));
  const mcpCli = join(process.cwd(), 'node_modules/@playwright/mcp/cli.js');

  const rbrowse = async () => {
    const client = new Client({ name: 'bench-agent', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${d.baseUrl}/mcp?tools=browsers,page`), {
        requestInit: { headers: { authorization: `Bearer ${d.apiKey}` } },
      }),
    );
    return { client, close: () => client.close() };
  };
  const raw = (settle?: number) => async (i: number) => {
    const profile = await raws.prepare();
    const browser = await raws.launch(profile);
    const config = join(work, `config-${profile.name}.json`);
    await writeFile(
      config,
      JSON.stringify({
        browser: { cdpEndpoint: browser.wsUrl },
        outputDir: join(work, `out-${i}`),
        ...(settle !== undefined ? { timeouts: { settle } } : {}),
      }),
    );
    const client = new Client({ name: 'bench-agent', version: '1' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [mcpCli, '--config', config], stderr: 'ignore' }));
    return { client, close: async () => (await client.close(), await raws.dispose(profile)) };
  };

  const rows: string[][] = [];
  const perTool: string[][] = [];
  for (const n of [1, 8]) {
    progress(`${n} agent(s), ${LOOPS} loops each: rbrowse's MCP`);
    const ours = await runAgents(n, rbrowse, pageUrl);
    progress(`${n} agent(s): @playwright/mcp on raw Chromium`);
    const floor = await runAgents(n, raw(), pageUrl);
    progress(`${n} agent(s): @playwright/mcp on raw Chromium, settle 0`);
    const unsettled = await runAgents(n, raw(0), pageUrl);
    rows.push([
      String(n),
      ours.perAgent.toFixed(2),
      floor.perAgent.toFixed(2),
      (floor.perAgent / ours.perAgent).toFixed(2),
      ours.total.toFixed(2),
      floor.total.toFixed(2),
      `${ours.errors}/${floor.errors}`,
    ]);
    for (const s of STEPS) {
      const q = (t: number[], p: number) =>
        percentile(
          [...t].sort((a, b) => a - b),
          p,
        ).toFixed(0);
      perTool.push([
        `${n}`,
        s,
        `${q(ours.t[s], 0.5)} / ${q(ours.t[s], 0.9)}`,
        `${q(floor.t[s], 0.5)} / ${q(floor.t[s], 0.9)}`,
        (Number(q(ours.t[s], 0.5)) / Number(q(floor.t[s], 0.5))).toFixed(2),
        `${(Number(q(floor.t[s], 0.5)) - Number(q(unsettled.t[s], 0.5))).toFixed(0)}`,
      ]);
    }
  }
  console.log(
    textTable(
      [
        'agents',
        'rbrowse actions/s per agent',
        'raw actions/s per agent',
        'time ratio (raw/rbrowse rate)',
        'rbrowse actions/s in all',
        'raw in all',
        'errors rbrowse/raw',
      ],
      rows,
    ),
  );
  console.log('');
  console.log(textTable(['agents', 'tool', 'rbrowse p50 / p90 ms', 'raw p50 / p90 ms', 'p50 ratio', 'settling in raw p50 (ms)'], perTool));
  console.log('');
  console.log(`goals: time ratio <= 1.1x the floor; 3x Kernel's cloud (6.07 actions/s, a public comparison): 18.2 actions/s; no error with 8 agents`);
  console.log(`load average: ${loadBefore} before, ${load()} after`);
});
