/**
 * Extensions: the extra time a headless session takes to create and to end when it loads 5
 * extensions, against the same session without any. Two kinds: the content-mark fixture as it
 * is (2 files: what loading costs), and with BENCH_EXT_FILES (default 100) random 10 KB scripts
 * beside it, about a mid-sized store extension (what copying into the session adds).
 * Run with `npm run bench:extensions`; BENCH_ITERATIONS (default 8 per side, after 1 warm-up).
 */
import { randomBytes } from 'node:crypto';
import { cp, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { zipFiles } from '../cli/app-zip.js';
import type { TestDaemon } from '../test/helpers/daemon.js';
import { ROOT, startTestDaemon } from '../test/helpers/daemon.js';
import { intEnv, load, progress, runBench } from './lifecycle.js';
import { createSession, deleteSession, interleave, timed } from './scenarios.js';
import { renderTable, summarize, type Comparison } from './stats.js';

const EXTENSIONS = 5;
const FILES = intEnv('BENCH_EXT_FILES', 100);
const ITERATIONS = intEnv('BENCH_ITERATIONS', 8);

interface Cycle {
  create: number;
  end: number;
}

/** POST /browsers and DELETE of one headless session, each timed. */
function cycle(d: TestDaemon, extensions?: { id: string }[]): () => Promise<Cycle> {
  return async () => {
    let id = '';
    const create = await timed(async () => (id = (await createSession(d, { headless: true, ...(extensions ? { extensions } : {}) })).session_id));
    const end = await timed(() => deleteSession(d, id));
    return { create, end };
  };
}

/** The content-mark fixture with `files` random scripts beside it, zipped. */
async function benchExtension(dir: string, files: number): Promise<Buffer> {
  await cp(join(ROOT, 'fixtures', 'extensions', 'content-mark'), dir, { recursive: true });
  await mkdir(join(dir, 'assets'));
  for (let i = 0; i < files; i++) await writeFile(join(dir, 'assets', `chunk-${i}.js`), `// ${randomBytes(7500).toString('base64')}\n`);
  const all = (await readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1));
  return zipFiles(dir, all);
}

async function upload(d: TestDaemon, zip: Buffer, name: string): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(zip)]), `${name}.zip`);
  form.append('name', name);
  const res = await fetch(`${d.baseUrl}/extensions`, { method: 'POST', headers: { authorization: `Bearer ${d.apiKey}` }, body: form });
  if (res.status !== 200) throw new Error(`POST /extensions answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

runBench(async (cleanups) => {
  const loadBefore = load();
  const scratch = await mkdtemp(join(tmpdir(), 'rbrowse-bench-ext-'));
  cleanups.push(() => rm(scratch, { recursive: true, force: true }));
  const daemon = await startTestDaemon();
  cleanups.push(() => daemon.stop());

  const uploads: number[] = [];
  /** Uploads EXTENSIONS extensions of `files` extra files each; their selections and the zip size. */
  const uploadSet = async (kind: string, files: number) => {
    progress(`uploading ${EXTENSIONS} ${kind} extensions (${files + 2} files each)`);
    const ids: { id: string }[] = [];
    let bytes = 0;
    for (let i = 0; i < EXTENSIONS; i++) {
      const zip = await benchExtension(join(scratch, `${kind}-${i}`), files);
      bytes = zip.length;
      uploads.push(await timed(async () => ids.push({ id: await upload(daemon, zip, `bench-${kind}-${i}`) })));
    }
    return { ids, bytes };
  };
  const small = await uploadSet('small', 0);
  const mid = await uploadSet('mid', FILES);
  progress(`1 warm-up + ${ITERATIONS} cycles per side`);
  const [plain, smallCycles, midCycles] = await interleave(1, ITERATIONS, [cycle(daemon), cycle(daemon, small.ids), cycle(daemon, mid.ids)]);
  const compare = (metric: string, samples: Cycle[], key: keyof Cycle): Comparison => ({
    metric,
    unit: 'ms',
    rbrowse: summarize(samples.map((c) => c[key])),
    raw: summarize(plain!.map((c) => c[key])),
  });
  const kb = (bytes: number) => `${Math.ceil(bytes / 1024)} KB`;
  const rows = [
    compare(`create, ${EXTENSIONS} x 2 files (${kb(small.bytes)})`, smallCycles!, 'create'),
    compare(`end, ${EXTENSIONS} x 2 files`, smallCycles!, 'end'),
    compare(`create, ${EXTENSIONS} x ${FILES + 2} files (${kb(mid.bytes)})`, midCycles!, 'create'),
    compare(`end, ${EXTENSIONS} x ${FILES + 2} files`, midCycles!, 'end'),
  ];
  console.log(`\nrbrowse extensions bench: ${cpus().length} CPUs, load average ${loadBefore} before, ${load()} after`);
  console.log(`sizes are each extension's zip; "raw" is the same headless session without extensions\n`);
  console.log(renderTable(rows));
  console.log('');
  const signed = (ms: number) => `${ms >= 0 ? '+' : ''}${ms.toFixed(0)}`;
  for (const r of rows) console.log(`${r.metric}: ${signed(r.rbrowse.p50 - r.raw.p50)} ms at p50`);
  const up = summarize(uploads);
  console.log(`upload of one extension (POST /extensions: receive, extract, check): p50 ${up.p50.toFixed(0)} ms over ${up.n} (both kinds)`);
});
