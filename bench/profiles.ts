/**
 * Profiles: the extra time a headless session takes to create and to end when it loads a 50 MB
 * profile (random, incompressible files in its IndexedDB directory), read-only and with
 * save_changes, against the same session without a profile. Run with `npm run bench:profiles`.
 * BENCH_PROFILE_MB (default 50) and BENCH_ITERATIONS (default 8 per side, after 1 warm-up).
 */
import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join } from 'node:path';
import type { TestDaemon } from '../test/helpers/daemon.js';
import { startTestDaemon } from '../test/helpers/daemon.js';
import { intEnv, load, progress, runBench } from './lifecycle.js';
import { createAndEnd, createSession, deleteSession, interleave } from './scenarios.js';
import { renderTable, summarize, type Comparison } from './stats.js';

const PROFILE_MB = intEnv('BENCH_PROFILE_MB', 50);
const ITERATIONS = intEnv('BENCH_ITERATIONS', 8);
const FILE_MB = 5;

type Cycle = Awaited<ReturnType<typeof createAndEnd>>;

/** One headless session with this profile selection (or none), created and ended, each timed. */
const cycle = (d: TestDaemon, profile?: object) => () => createAndEnd(d, { headless: true, ...(profile ? { profile } : {}) });

/** Fills a new profile with `mb` MB of random files through a session with save_changes. */
async function bigProfile(d: TestDaemon, mb: number): Promise<string> {
  const profile = (await d.api('POST', '/profiles', { name: 'bench-big' })).body;
  const session = await createSession(d, { headless: true, profile: { id: profile.id, save_changes: true } });
  const dir = '/home/kernel/user-data/Default/IndexedDB/bench_0.indexeddb.blob';
  const mkdir = await d.api('PUT', `/browsers/${session.session_id}/fs/create_directory`, { path: dir });
  if (mkdir.status !== 204) throw new Error(`create_directory answered ${mkdir.status}: ${mkdir.text}`);
  for (let i = 0; i * FILE_MB < mb; i++) {
    const path = `${dir}/${i}`;
    const res = await fetch(`${d.baseUrl}/browsers/${session.session_id}/fs/write_file?path=${encodeURIComponent(path)}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${d.apiKey}`, 'content-type': 'application/octet-stream' },
      body: new Uint8Array(randomBytes(Math.min(FILE_MB, mb - i * FILE_MB) * 1024 * 1024)),
    });
    if (res.status !== 204) throw new Error(`write_file answered ${res.status}: ${await res.text()}`);
  }
  await deleteSession(d, session.session_id);
  return profile.id;
}

runBench(async (cleanups) => {
  const loadBefore = load();
  const daemon = await startTestDaemon();
  cleanups.push(() => daemon.stop());

  progress(`filling a ${PROFILE_MB} MB profile`);
  const id = await bigProfile(daemon, PROFILE_MB);
  const archiveMb = (await stat(join(daemon.home, 'profiles', id, 'data.tar'))).size / 1024 ** 2;
  progress(`saved archive: ${archiveMb.toFixed(1)} MB; 1 warm-up + ${ITERATIONS} cycles per side`);

  const [plain, readOnly, saving] = await interleave(1, ITERATIONS, [
    cycle(daemon),
    cycle(daemon, { id }),
    cycle(daemon, { id, save_changes: true }),
  ]);
  const compare = (metric: string, samples: Cycle[], key: keyof Cycle): Comparison => ({
    metric,
    unit: 'ms',
    rbrowse: summarize(samples.map((c) => c[key])),
    raw: summarize(plain!.map((c) => c[key])),
  });
  const rows = [
    compare(`create, ${PROFILE_MB} MB profile read-only`, readOnly!, 'create'),
    compare(`end, ${PROFILE_MB} MB profile read-only`, readOnly!, 'end'),
    compare(`create, ${PROFILE_MB} MB profile save_changes`, saving!, 'create'),
    compare(`end (and save), ${PROFILE_MB} MB profile save_changes`, saving!, 'end'),
  ];
  console.log(`\nrbrowse profiles bench: ${cpus().length} CPUs, load average ${loadBefore} before, ${load()} after`);
  console.log(`archive ${archiveMb.toFixed(1)} MB; "raw" is the same headless session without a profile\n`);
  console.log(renderTable(rows));
  console.log('');
  const signed = (ms: number) => `${ms >= 0 ? '+' : ''}${ms.toFixed(0)}`;
  for (const r of rows) console.log(`${r.metric}: ${signed(r.rbrowse.p50 - r.raw.p50)} ms at p50`);
});
