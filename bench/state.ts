/**
 * What a state change costs once history has piled up: 10,000 finished invocations (and as many
 * ended sessions), then PATCH-like updates of one live record. "rbrowse" keeps the finished ones in
 * its histories (daemon/lib/state/history.ts), as the daemon does; the floor is the same store and the
 * same durable writer with everything inline in the one document, as the daemon kept it before.
 * Also: what recording one more finished invocation costs in each layout.
 *
 *   npm run bench:state [-- --records 10000 --rounds 200]
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { History } from '../daemon/lib/state/history.js';
import { Store } from '../daemon/lib/state/store.js';
import type { InvocationRecord } from '../daemon/apps/invocations.js';
import type { SessionRecord } from '../daemon/sessions/record.js';
import '../daemon/org/auth.js';
import { summarize } from './stats.js';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const RECORDS = arg('--records', 10_000);
const ROUNDS = arg('--rounds', 200);
const retention = { maxAgeMs: 365 * 24 * 3600 * 1000, maxCount: RECORDS * 2 };

const invocation = (i: number): InvocationRecord => ({
  id: `inv${String(i).padStart(21, '0')}`,
  org_id: 'org00000000000000000000a',
  deployment_id: 'dep00000000000000000000a',
  app_name: 'my-app',
  version: 'latest',
  action_name: 'scrape',
  status: 'succeeded',
  payload: JSON.stringify({ url: `https://example.com/${i}` }),
  output: JSON.stringify({ title: 'Example Domain', links: 1 }),
  started_at: new Date(Date.now() - 60_000).toISOString(),
  finished_at: new Date().toISOString(),
  async: true,
  timeout_seconds: 900,
});
const session = (i: number): SessionRecord => ({
  id: `ses${String(i).padStart(21, '0')}`,
  org_id: 'org00000000000000000000a',
  created_at: new Date(Date.now() - 60_000).toISOString(),
  deleted_at: new Date().toISOString(),
  end_reason: 'deleted',
  headless: true,
  stealth: false,
  kiosk_mode: false,
  timeout_seconds: 60,
  viewport: { width: 1920, height: 1080, refresh_rate: 25 },
});

async function measure(layout: 'history' | 'inline') {
  const dir = await mkdtemp(join(tmpdir(), `rbrowse-bench-state-${layout}-`));
  try {
    const store = await Store.open(join(dir, 'state.json'));
    const live = store.collection('sessions');
    const invocations = store.collection('invocations');
    const sessionHistory = await History.open<SessionRecord>(join(dir, 'sessions.jsonl'), retention, () => Date.now());
    const invocationHistory = await History.open<InvocationRecord>(join(dir, 'invocations.jsonl'), retention, () => Date.now());
    for (let i = 0; i < RECORDS; i++) {
      if (layout === 'inline') {
        invocations.push(invocation(i));
        live.push(session(i));
      } else {
        await invocationHistory.put(invocation(i));
        await sessionHistory.put(session(i));
      }
    }
    const mine = { ...session(RECORDS), deleted_at: undefined, name: 'a' };
    await store.update((s) => void s.sessions.push(mine));
    const patch: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const t = performance.now();
      await store.update(() => void (mine.name = `name-${i}`));
      patch.push(performance.now() - t);
    }
    const finish: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const record = invocation(RECORDS + 1 + i);
      const t = performance.now();
      if (layout === 'inline') await store.update((s) => void s.invocations.push(record));
      else await invocationHistory.put(record);
      finish.push(performance.now() - t);
    }
    const bytes = (await stat(join(dir, 'state.json'))).size;
    await Promise.all([sessionHistory.close(), invocationHistory.close(), store.flushed()]);
    return { patch: summarize(patch), finish: summarize(finish), bytes };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const history = await measure('history');
const inline = await measure('inline');
const fmt = (ms: number) => `${ms.toFixed(2)} ms`;
console.log(`state write cost with ${RECORDS} finished invocations and ${RECORDS} ended sessions, ${ROUNDS} rounds each (fsync on)`);
console.log(`${'metric'.padEnd(34)}${'rbrowse p50'.padStart(14)}${'inline p50'.padStart(14)}${'ratio'.padStart(9)}`);
for (const [name, key] of [
  ['PATCH a live session', 'patch'],
  ['record a finished invocation', 'finish'],
] as const) {
  const a = history[key].p50;
  const b = inline[key].p50;
  console.log(`${name.padEnd(34)}${fmt(a).padStart(14)}${fmt(b).padStart(14)}${(a / b).toFixed(3).padStart(9)}`);
}
console.log(
  `${'state.json size'.padEnd(34)}${`${(history.bytes / 1024).toFixed(1)} KiB`.padStart(14)}${`${(inline.bytes / 1024).toFixed(1)} KiB`.padStart(14)}`,
);
