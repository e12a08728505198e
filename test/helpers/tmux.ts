import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { sleep } from './daemon.js';

/** tmux runs a pane's command through sh -c. */
const shellQuote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;

/** What the pane's shell prints after the command: tmux's own record of a pane's exit status is not reliable. */
const EXITED = /\n?\[exited (\d+)\]\s*$/;

/**
 * A real terminal for a command, run by tmux on a server of its own (its own socket): the test
 * reads the screen, types keys and resizes the window as a person would. stop() kills that server.
 */
export class TmuxTerminal {
  private readonly socket = `rbrowse-test-${randomUUID().slice(0, 8)}`;

  private constructor() {}

  /**
   * Starts `argv` in a detached session of the given size, as the child of a shell that prints
   * its exit status; the pane stays after it exits, so its output can be read.
   */
  static start(argv: string[], opts: { env: Record<string, string>; columns: number; rows: number; cwd?: string }): TmuxTerminal {
    const t = new TmuxTerminal();
    const envArgs = Object.entries({ ...opts.env, TERM: 'xterm-256color' }).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
    // One command queue: the pane is kept (remain-on-exit) before the command can exit, and the
    // window keeps the size it is given (no client attaches to resize it).
    t.tmux([
      '-f',
      '/dev/null',
      'new-session',
      '-d',
      '-x',
      String(opts.columns),
      '-y',
      String(opts.rows),
      ...(opts.cwd ? ['-c', opts.cwd] : []),
      ...envArgs,
      `${argv.map(shellQuote).join(' ')}; echo "[exited $?]"`,
      ';',
      'set-option',
      '-g',
      'remain-on-exit',
      'on',
      ';',
      'set-option',
      '-g',
      'window-size',
      'manual',
    ]);
    return t;
  }

  private tmux(args: string[], env?: Record<string, string>): string {
    return execFileSync('tmux', ['-L', this.socket, ...args], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...(env ?? { TERM: 'xterm-256color' }) },
    });
  }

  /**
   * The visible screen as text, one string per row joined by newlines; `escapes`: with colour and attribute escape sequences; `history`:
   * from the start of the scrollback (what a command that exited printed: tmux scrolls it up to
   * show that the pane is dead).
   */
  screen(opts: { escapes?: boolean; history?: boolean } = {}): string {
    // -J joins lines the terminal wrapped, so a long line reads as printed.
    const text = this.tmux(['capture-pane', '-p', '-J', ...(opts.escapes ? ['-e'] : []), ...(opts.history ? ['-S', '-'] : []), '-t', '0']);
    return text.replace(/\n$/, '');
  }

  /** Waits until the command exited; its status and everything it printed. */
  async waitForExit(timeoutMs: number, opts: { escapes?: boolean } = {}): Promise<{ status: number; output: string }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const output = this.screen({ ...opts, history: true })
        .replace(/\n*Pane is dead[^\n]*\n*$/, '')
        .trimEnd();
      const exited = EXITED.exec(output);
      if (exited) return { status: Number(exited[1]), output: output.slice(0, exited.index).trimEnd() };
      if (Date.now() > deadline) throw new Error(`the command did not exit within ${timeoutMs} ms; screen:\n${this.screen()}`);
      await sleep(25);
    }
  }

  /** tmux key names (Up, Down, Enter, Escape) or literal characters. */
  keys(...keys: string[]): void {
    this.tmux(['send-keys', '-t', '0', ...keys]);
  }

  resize(columns: number, rows: number): void {
    this.tmux(['resize-window', '-t', '0', '-x', String(columns), '-y', String(rows)]);
  }

  /** The command's process (the child of the pane's shell), while it runs. */
  commandPid(): number {
    const shell = this.tmux(['display-message', '-p', '-t', '0', '#{pane_pid}']).trim();
    const children = readFileSync(`/proc/${shell}/task/${shell}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    if (children.length !== 1) throw new Error(`the pane's shell ${shell} has children [${children.join(', ')}], not one`);
    return Number(children[0]);
  }

  /** Polls the screen until `check` holds; fails with the last screen after timeoutMs. */
  async waitForScreen(check: (screen: string) => boolean, timeoutMs: number, what: string): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const screen = this.screen();
      if (check(screen)) return screen;
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; screen:\n${screen}`);
      await sleep(25);
    }
  }

  stop(): void {
    try {
      this.tmux(['kill-server']);
    } catch {
      // already gone
    }
  }
}
