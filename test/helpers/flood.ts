import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Another local user (nobody, through setpriv, when this runs as root) holding `n` connections to
 * a port, each with half a request line, reading (and dropping) what comes back so that it sees
 * a close at once, and reopening any that is closed (after `reopenMs`).
 * stop() ends it and says how many connections it opened in all.
 */
export async function startFlood(port: number, n: number, reopenMs = 50): Promise<{ uid: number; stop(): Promise<number> }> {
  const dir = await mkdtemp(join(tmpdir(), 'rbrowse-flood-'));
  await chmod(dir, 0o755);
  const script = join(dir, 'flood.mjs');
  await writeFile(
    script,
    `import net from 'node:net';
let opened = 0, stop = false;
const open = () => { if (stop) return; opened++; const s = net.connect(${port}, '127.0.0.1', () => s.write('GET /hea')); s.resume(); s.on('error', () => {}); s.on('close', () => setTimeout(open, ${reopenMs})); };
for (let i = 0; i < ${n}; i++) open();
process.stdin.on('data', () => { stop = true; process.stdout.write(String(opened)); process.exit(0); });
`,
  );
  await chmod(script, 0o644);
  const root = process.getuid?.() === 0;
  const argv = [...(root ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : []), process.execPath, script];
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b));
  const exited = new Promise((r) => child.once('exit', r));
  let stopped: Promise<number> | undefined;
  return {
    uid: root ? 65534 : (process.getuid?.() ?? -1),
    stop() {
      stopped ??= (async () => {
        child.stdin!.end('stop\n');
        await exited;
        await rm(dir, { recursive: true, force: true });
        return Number(out) || 0;
      })();
      return stopped;
    },
  };
}
