import { addAbortListener } from 'node:events';
import { Type } from 'typebox';
import { ReplResultSchema, type ReplBody, type ReplResult } from '../../../src/api/repl.js';
import { BadRequestError, NotFoundError, ServiceUnavailableError } from '../../../src/errors.js';
import { newId } from '../../../src/ids.js';
import type { BoxProcess } from '../../box/box.js';
import { BOX_NODE, BOX_RUNTIME } from '../../box/box-spec.js';
import { LineSplitter } from '../../lib/line-splitter.js';
import { SerialQueue } from '../../lib/serial-queue.js';
import { lazyValidator } from '../../lib/validators.js';
import type { LiveSession, ServiceKind, SessionService } from '../../sessions/live-session.js';
import { processesOf } from '../process/session-processes.js';

const DEFAULT_TIMEOUT_SEC = 60;
/** Custom tool definitions are a list of objects: evaluating them takes no time unless the source loops. */
const DEFINE_TIMEOUT_MS = 10_000;
/** The runtime as the session's box sees it (rbrowse's runtime is at /opt/rbrowse there). */
const RUNTIME_PATH = `${BOX_RUNTIME}/daemon/in-session/repl/runtime.mjs`;
/** How long a fresh runtime may take to load before the call fails (Node's start on a busy machine). */
const START_TIMEOUT_MS = 30_000;
/** What is kept of the runtime's own error output, for an answer about its crash. */
const STDERR_KEPT = 8 * 1024;
/** The longest answer line: a cell's 16 MiB of images in base64 and its text, with room to spare. */
const MAX_ANSWER_CHARS = 32 * 1024 * 1024;

/** One answer from the runtime (runtime.mjs): a cell's, custom tools' definitions, a tool's output; or its last word before a crash. */
type RuntimeLine = { seq?: number; ready?: true; crashed?: string; definitions?: unknown; output?: unknown } & Omit<ReplResult, 'repl_id'>;

/** What the runtime is asked: a cell, custom tool definitions to evaluate, a CDP-backed tool to run. */
type Request = { code: string } | { define: string } | { tool: { execute: string; input: unknown; targetId: string } };

/** How a request ended: its answer, or the runtime's end (stoppedBy: the timeout or the client, else a crash). */
interface Exchange {
  runtime: Runtime;
  answer?: RuntimeLine;
  stoppedBy?: string;
  durationMs: number;
}

/** What the runtime answers on fd 3, checked before the daemon uses it. */
const RuntimeLineSchema = Type.Union([
  Type.Object({ ready: Type.Literal(true) }, { additionalProperties: false }),
  Type.Object({ crashed: Type.String() }, { additionalProperties: false }),
  Type.Object(
    {
      seq: Type.Integer(),
      success: Type.Boolean(),
      content: Type.Optional(ReplResultSchema.properties.content),
      content_truncated: Type.Optional(Type.Boolean()),
      duration_ms: Type.Optional(Type.Integer({ minimum: 0 })),
      error: Type.Optional(Type.String()),
      stack: Type.Optional(Type.String()),
      definitions: Type.Optional(Type.Array(Type.Unknown())),
      output: Type.Optional(Type.Unknown()),
    },
    { additionalProperties: false },
  ),
]);
const validLine = lazyValidator<RuntimeLine>(RuntimeLineSchema);

function parseLine(text: string): RuntimeLine | undefined {
  try {
    const line: unknown = JSON.parse(text);
    return validLine(line) ? line : undefined;
  } catch {
    return undefined;
  }
}

/** One runtime process: a persistent Node REPL in the session's box, with the id Kernel calls repl_id. */
class Runtime {
  readonly id = newId();
  private seq = 0;
  private readonly waiting = new Map<number, (line: RuntimeLine) => void>();
  private stderr = '';
  private readonly ready: Promise<void>;
  /** Why it ended, once it did. */
  ended?: string;

  constructor(private readonly child: BoxProcess) {
    child.stderr?.on('data', (d: Buffer) => (this.stderr = (this.stderr + d.toString()).slice(-STDERR_KEPT)));
    // What the code prints is taken inside the runtime; whatever still reaches its stdout is read and dropped.
    child.stdout?.resume();
    child.stdin?.on('error', () => {});
    let started!: () => void;
    this.ready = new Promise((resolve) => (started = resolve));
    // The code can write to fd 3 too: an answer that is not one the runtime sends (too long, not
    // JSON, not of its shape) ends the runtime as Kernel ends a REPL on protocol corruption, and
    // the daemon never holds more than one bounded line of it.
    const lines = new LineSplitter((text) => {
      const line = parseLine(text);
      if (!line) return this.corrupt();
      if (line.ready) started();
      else if (line.crashed) {
        // It exits by itself; the kill makes sure a forged last word ends it all the same.
        this.ended ??= `the REPL crashed on an error no cell was running for: ${line.crashed.split('\n')[0]}`;
        this.kill();
      } else if (line.seq !== undefined) this.waiting.get(line.seq)?.(line);
    }, MAX_ANSWER_CHARS);
    child.fds[3]!.on('data', (chunk: Buffer) => lines.write(chunk));
    void child.exited.then((exit) => {
      this.ended ??= `the REPL's process ended (${exit.signal ?? `exit code ${exit.code}`})${this.stderr ? `: ${this.stderr.trim().split('\n').at(-1)}` : ''}`;
      started();
      for (const answer of this.waiting.values()) answer({ success: false });
      this.waiting.clear();
    });
  }

  async start(cdp: string): Promise<void> {
    this.child.stdin?.write(`${JSON.stringify({ cdp, replId: this.id })}\n`);
    const timer = setTimeout(() => this.kill(), START_TIMEOUT_MS);
    await this.ready.finally(() => clearTimeout(timer));
    if (this.ended) throw new Error(this.ended);
  }

  /** One request: its answer, or undefined when the runtime ended meanwhile (this.ended says why). */
  request(request: Request): Promise<RuntimeLine | undefined> {
    const seq = ++this.seq;
    return new Promise((resolve) => {
      if (this.ended) return resolve(undefined);
      this.waiting.set(seq, (line) => {
        this.waiting.delete(seq);
        resolve(line.seq === undefined ? undefined : line);
      });
      this.child.stdin?.write(`${JSON.stringify({ seq, ...request })}\n`);
    });
  }

  kill(): void {
    this.child.kill('SIGKILL');
  }

  private corrupt(): void {
    this.ended ??= "the REPL's answer was not understood (something in it wrote to the REPL's own channel); the REPL was stopped";
    this.kill();
  }

  get exited(): Promise<unknown> {
    return this.child.exited;
  }
}

/**
 * Kernel's browser REPL: JavaScript in a persistent Node runtime beside the session's browser,
 * its top-level bindings kept from call to call, with browser helpers (cdp, gotoUrl, click, ...)
 * on a DevTools connection of its own. The runtime is a process in the session's box, as its
 * user, like every program the session runs: it can reach only what the session reaches.
 * Calls run one at a time. A timeout kills the runtime (an endless loop cannot be interrupted
 * otherwise), as do a reset and a crash; the next call starts a fresh one with a new repl_id.
 */
export class SessionRepl implements SessionService {
  private runtime?: Runtime;
  private readonly queue = new SerialQueue();
  private stopped = false;

  constructor(private readonly session: LiveSession) {}

  run(cdpUrl: string, body: ReplBody, clientGone: AbortSignal): Promise<ReplResult> {
    if (body.code.trim() === '' && !body.reset) throw new BadRequestError('code: give the JavaScript to run (it may be empty only with reset: true)');
    return this.queue.run(async () => {
      if (body.reset) await this.end();
      if (body.code.trim() === '') return { repl_id: (await this.current(cdpUrl)).id, success: true, content: [], duration_ms: 0 };
      const timeoutSec = body.timeout_sec ?? DEFAULT_TIMEOUT_SEC;
      const x = await this.exchange(cdpUrl, { code: body.code }, timeoutSec * 1000, clientGone);
      if (x.answer) return { repl_id: x.runtime.id, ...withoutSeq(x.answer) };
      return {
        repl_id: x.runtime.id,
        success: false,
        error: x.stoppedBy ?? x.runtime.ended ?? 'the REPL ended',
        repl_terminated: true,
        duration_ms: x.durationMs,
      };
    });
  }

  /**
   * Evaluates WebMCP custom tool definitions (their source is the caller's code) in the runtime,
   * apart from the REPL's bindings: each one's metadata, and its execute function's source.
   */
  async define(cdpUrl: string, source: string): Promise<unknown[]> {
    const x = await this.queue.run(() => this.exchange(cdpUrl, { define: source }, DEFINE_TIMEOUT_MS));
    if (!x.answer) throw new BadRequestError(`source: ${x.stoppedBy ?? x.runtime.ended ?? 'the REPL ended while evaluating it'}`);
    if (!x.answer.success) throw new BadRequestError(`source: ${x.answer.error}`);
    return x.answer.definitions as unknown[];
  }

  /**
   * Runs a CDP-backed custom tool's execute in the runtime, with the REPL's helpers, on the tab
   * given. A tool that outlives timeoutMs takes the runtime with it: undefined then (its outcome
   * is unknown).
   */
  async callTool(cdpUrl: string, tool: { execute: string; input: unknown; targetId: string }, timeoutMs: number): Promise<RuntimeLine | undefined> {
    const x = await this.queue.run(() => this.exchange(cdpUrl, { tool }, timeoutMs));
    return x.answer;
  }

  /** One request to the runtime (started if need be), stopped with it at timeoutMs or when the client goes. */
  private async exchange(cdpUrl: string, request: Request, timeoutMs: number, clientGone?: AbortSignal): Promise<Exchange> {
    const runtime = await this.current(cdpUrl);
    const release = this.session.hold('api');
    let stoppedBy: string | undefined;
    const stop = (why: string) => {
      stoppedBy ??= why;
      runtime.kill();
    };
    const timer = setTimeout(() => stop(`the code ran longer than timeout_sec (${timeoutMs / 1000} s); the REPL was stopped`), timeoutMs);
    // Also when the client went while the runtime started: an abort that came already still stops it.
    const gone = clientGone && addAbortListener(clientGone, () => stop('the client went away; the REPL was stopped'));
    const started = Date.now();
    try {
      const answer = await runtime.request(request);
      if (!answer) await runtime.exited;
      return { runtime, answer, stoppedBy, durationMs: Date.now() - started };
    } finally {
      clearTimeout(timer);
      gone?.[Symbol.dispose]();
      release();
      if (this.runtime?.ended) this.runtime = undefined;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.end();
  }

  private async current(cdpUrl: string): Promise<Runtime> {
    if (this.runtime && !this.runtime.ended) return this.runtime;
    if (this.stopped) throw new NotFoundError('the session is ending');
    const child = processesOf(this.session).helper([BOX_NODE, RUNTIME_PATH], { stdin: true, extraFds: [3] });
    const runtime = new Runtime(child);
    this.runtime = runtime;
    try {
      await runtime.start(cdpUrl);
    } catch (err) {
      this.runtime = undefined;
      runtime.kill();
      throw new ServiceUnavailableError(`the REPL could not start: ${(err as Error).message}`);
    }
    return runtime;
  }

  private async end(): Promise<void> {
    const runtime = this.runtime;
    this.runtime = undefined;
    if (!runtime) return;
    runtime.kill();
    await runtime.exited;
  }
}

function withoutSeq({ seq: _seq, ready: _ready, crashed: _crashed, definitions: _d, output: _o, ...rest }: RuntimeLine): Omit<ReplResult, 'repl_id'> {
  return rest;
}

const newRepl: ServiceKind<SessionRepl> = (session) => new SessionRepl(session);

/** The session's browser REPL; it ends with the session. */
export const replOf = (session: LiveSession): SessionRepl => session.service(newRepl);
