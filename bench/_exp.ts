import { readFile } from 'node:fs/promises';
import { startTestDaemon } from '../test/helpers/daemon.js';
import { findMarkedProcesses } from '../daemon/browser/procs.js';
import { directWsUrl } from './cdp.js';
const daemon = await startTestDaemon();
try {
  for (let i = 0; i < 20; i++) {
    const res = await daemon.api('POST', '/browsers', { headless: true });
    const id = res.body.session_id;
    try { await directWsUrl(daemon.home, id); process.stdout.write('.'); }
    catch (e) {
      console.log('\nFAIL', String(e));
      for (const pid of await findMarkedProcesses(daemon.home, id)) console.log(pid, (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '?')).slice(0, 200).replaceAll('\0', ' '));
    }
    await daemon.api('DELETE', `/browsers/${id}`);
  }
} finally { await daemon.stop(); }
