/**
 * Filesystem API throughput: a 50 MB file written and read through the API of a
 * session, against a plain local copy of the same bytes on the same disk. Run: npx tsx bench/fs.ts
 */
import { randomBytes } from 'node:crypto';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestDaemon } from '../test/helpers/daemon.js';
import { alternate, timed } from './scenarios.js';
import { renderTable, summarize, type Comparison } from './stats.js';

const SIZE = 50 * 1024 * 1024;
const ROUNDS = Number(process.env.BENCH_FS_ROUNDS ?? 5);

async function main(): Promise<void> {
  const daemon = await startTestDaemon();
  const scratch = await mkdtemp(join(tmpdir(), 'rbrowse-bench-fs-'));
  try {
    const data = randomBytes(SIZE);
    const source = join(scratch, 'source.bin');
    await writeFile(source, data);
    const created = await daemon.api('POST', '/browsers', { headless: true });
    const id = created.body.session_id as string;
    const auth = { authorization: `Bearer ${daemon.apiKey}` };
    const url = (op: string) => `${daemon.baseUrl}/browsers/${id}/fs/${op}?path=${encodeURIComponent('/tmp/bench.bin')}`;

    const [apiWrite, localWrite] = await alternate(
      1,
      ROUNDS,
      () =>
        timed(async () => {
          const res = await fetch(url('write_file'), { method: 'PUT', headers: { ...auth, 'content-type': 'application/octet-stream' }, body: data });
          if (res.status !== 204) throw new Error(`write_file answered ${res.status}`);
        }),
      () => timed(() => copyFile(source, join(scratch, 'copy.bin'))),
    );
    const [apiRead, localRead] = await alternate(
      1,
      ROUNDS,
      () =>
        timed(async () => {
          const res = await fetch(url('read_file'), { headers: auth });
          const bytes = Buffer.from(await res.arrayBuffer());
          if (bytes.length !== SIZE) throw new Error(`read_file returned ${bytes.length} bytes`);
        }),
      () => timed(async () => void (await readFile(join(scratch, 'copy.bin')))),
    );
    const rows: Comparison[] = [
      { metric: 'write 50 MB: write_file vs copyFile', unit: 'ms', rbrowse: summarize(apiWrite), raw: summarize(localWrite) },
      { metric: 'read 50 MB: read_file vs readFile', unit: 'ms', rbrowse: summarize(apiRead), raw: summarize(localRead) },
    ];
    console.log(`\nrbrowse fs bench (${ROUNDS} rounds, 50 MB; "raw" is a plain local copy on the same disk)\n`);
    console.log(renderTable(rows));
    const mbps = (ms: number) => (SIZE / 1024 / 1024 / (ms / 1000)).toFixed(0);
    console.log(`\nthroughput at p50: write_file ${mbps(summarize(apiWrite).p50)} MB/s, read_file ${mbps(summarize(apiRead).p50)} MB/s`);
  } finally {
    await rm(scratch, { recursive: true, force: true });
    await daemon.stop();
  }
}

await main();
