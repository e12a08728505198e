import { readdir, readFile, readlink } from 'node:fs/promises';
import { chromium, type Browser, type Page } from 'playwright';
import { resolveChromium } from '../../src/system-deps.js';
import { findMarkedProcesses } from '../../daemon/lib/procs.js';

/** A second, headless Chromium that opens live-view URLs as a person's browser would. */
export async function launchViewer(): Promise<Browser> {
  return chromium.launch({
    executablePath: resolveChromium(),
    // Playwright's own signal handlers would exit the process before the test's cleanup ran.
    handleSIGINT: false,
    handleSIGTERM: false,
    handleSIGHUP: false,
    args: ['--no-sandbox', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

export async function openLiveView(viewer: Browser, url: string, size = { width: 1024, height: 768 }): Promise<Page> {
  const page = await viewer.newPage({ viewport: size });
  // Nothing the viewer page asks for is refused (a favicon request once answered 401, an error in every viewer's console).
  const refused: string[] = [];
  page.on('response', (r) => {
    if (r.status() >= 400) refused.push(`${r.status()} ${r.url().replace(/jwt=[^&]+/, 'jwt=…')}`);
  });
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.state === 'connected', null, { timeout: 20_000 });
  if (refused.length) throw new Error(`the live view page had requests refused: ${refused.join(', ')}`);
  return page;
}

/** RGBA of the noVNC canvas at framebuffer coordinates (a string script: no bundler helpers in the page). */
export async function canvasPixels(page: Page, points: [number, number][]): Promise<number[][]> {
  return page.evaluate(
    `(() => { const c = document.querySelector('#screen canvas'); const ctx = c.getContext('2d');
      return ${JSON.stringify(points)}.map(([x, y]) => Array.from(ctx.getImageData(x, y, 1, 1).data)); })()`,
  ) as Promise<number[][]>;
}

/** The noVNC canvas's size, or null while there is none (noVNC removes it when its connection drops). */
export async function canvasSize(page: Page): Promise<{ width: number; height: number } | null> {
  return page.evaluate(
    `(() => { const c = document.querySelector('#screen canvas'); return c && { width: c.width, height: c.height }; })()`,
  ) as Promise<{
    width: number;
    height: number;
  } | null>;
}

/** RGBA of a PNG (e.g. a CDP screenshot) at the given points, decoded by the viewer browser itself. */
export async function pngPixels(page: Page, png: Buffer, points: [number, number][]): Promise<number[][]> {
  return page.evaluate(
    `(async () => { const img = new Image(); img.src = 'data:image/png;base64,${png.toString('base64')}'; await img.decode();
      const c = new OffscreenCanvas(img.width, img.height); const ctx = c.getContext('2d'); ctx.drawImage(img, 0, 0);
      return ${JSON.stringify(points)}.map(([x, y]) => Array.from(ctx.getImageData(x, y, 1, 1).data)); })()`,
  ) as Promise<number[][]>;
}

/**
 * Every TCP socket in LISTEN state that a process of this session holds, as "address:port" (hex
 * address as in /proc/net/tcp). Used to prove nothing of a session listens beyond loopback.
 */
export async function listeningSockets(home: string, sessionId: string): Promise<{ host: string[]; own: string[]; seen: string }> {
  const inodes = new Set<string>();
  const pids = await findMarkedProcesses(home, sessionId);
  for (const pid of pids) {
    const fds = await readdir(`/proc/${pid}/fd`).catch(() => [] as string[]);
    for (const fd of fds) {
      const link = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
      const m = /^socket:\[(\d+)\]$/.exec(link);
      if (m) inodes.add(m[1]!);
    }
  }
  const listening = async (tables: string[]) => {
    const found: string[] = [];
    for (const table of tables) {
      const lines = (await readFile(table, 'utf8').catch(() => '')).trim().split('\n').slice(1);
      for (const line of lines) {
        const [, local, , state, , , , , , inode] = line.trim().split(/\s+/);
        if (state === '0A' && inodes.has(inode!)) found.push(local!);
      }
    }
    return found;
  };
  // The tables of the host's network namespace (this process's), and of the session's own, read
  // through its box's agent (Chromium's renderers have namespaces of their own again).
  // The agent itself, not the bubblewraps whose command lines name it too: the outer one is in the
  // host's network namespace, and with pids wrapped around it can come last in the list.
  const hostNet = await readlink('/proc/self/ns/net');
  let agent: number | undefined;
  for (const pid of pids) {
    const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
    const net = await readlink(`/proc/${pid}/ns/net`).catch(() => hostNet);
    if (argv.some((a) => a.endsWith('agent.mjs')) && !argv[0]!.endsWith('bwrap') && net !== hostNet) agent = pid;
  }
  return {
    host: await listening(['/proc/net/tcp', '/proc/net/tcp6']),
    own: agent ? await listening([`/proc/${agent}/net/tcp`, `/proc/${agent}/net/tcp6`]) : [],
    // What the answer rests on, for an assertion's message.
    seen: `${pids.length} processes, ${inodes.size} sockets, agent ${agent ?? 'not found'}`,
  };
}
