import type { Executor, ExecutorList, PlaywrightExecuteBody, PlaywrightExecuteResult } from '../../../src/api/playwright.js';
import { ConflictError, NotFoundError } from '../../../src/errors.js';
import { cdpCommands } from '../../browser/chromium.js';
import { SerialQueue } from '../../lib/serial-queue.js';
import type { LiveSession, ServiceKind, SessionService } from '../../sessions/live-session.js';
import { executePlaywright } from './execute.js';

const DEFAULT = 'default';
/** Kernel's cap: named executors per browser (the default one does not count). */
export const MAX_NAMED_EXECUTORS = 8;

/** A call that would make one named executor too many: 409 with the ones that exist, as Kernel answers. */
export class ExecutorLimitError extends ConflictError {
  constructor(readonly executors: Executor[]) {
    super(`this browser has ${MAX_NAMED_EXECUTORS} named executors already; delete one (DELETE .../playwright/executors/{name})`);
  }

  override toBody() {
    return { ...super.toBody(), executors: this.executors };
  }
}

interface ExecutorState {
  name: string;
  createdAt: Date;
  lastUsedAt?: Date;
  /** A named executor's tab, once its first call opened it. */
  targetId?: string;
  queue: SerialQueue;
  /** The call running now: aborted (with the reason it fails with) by a delete or the session's end. */
  running?: AbortController;
}

/**
 * Kernel's Playwright executors: calls on one executor run one at a time, in order; calls on
 * different executors at once. The default one drives the active tab; a named one owns a tab of
 * its own, opened in the background by its first call (and again if it was closed). Each call
 * still runs in a process of its own (executePlaywright): a loop or a crash ends only that call,
 * and no state is kept between calls, as Kernel gives each call a fresh context. Deleting an
 * executor fails the call running on it (and those queued); the default one is only restarted.
 */
export class PlaywrightExecutors implements SessionService {
  private readonly executors = new Map<string, ExecutorState>();

  constructor(private readonly session: LiveSession) {
    this.executors.set(DEFAULT, { name: DEFAULT, createdAt: new Date(), queue: new SerialQueue() });
  }

  async execute(cdpUrl: string, body: PlaywrightExecuteBody, clientGone: AbortSignal): Promise<PlaywrightExecuteResult> {
    const name = body.executor ?? DEFAULT;
    let executor = this.executors.get(name);
    if (!executor) {
      if (this.executors.size - 1 >= MAX_NAMED_EXECUTORS) throw new ExecutorLimitError(await this.executorViews());
      executor = { name, createdAt: new Date(), queue: new SerialQueue() };
      this.executors.set(name, executor);
    }
    const mine = executor;
    return mine.queue.run(async () => {
      // Deleted while this call waited its turn.
      if (this.executors.get(name) !== mine) return { success: false, error: `the executor ${name} was deleted` };
      mine.lastUsedAt = new Date();
      const running = new AbortController();
      mine.running = running;
      try {
        const tab = name === DEFAULT ? undefined : await this.tabOf(mine);
        const tabs = tab ? { targetId: tab.target_id } : { avoid: this.ownedTabs() };
        const result = await executePlaywright(this.session, cdpUrl, body, AbortSignal.any([clientGone, running.signal]), tabs);
        if (running.signal.aborted) return { success: false, error: String(running.signal.reason), stdout: result.stdout, stderr: result.stderr };
        return tab ? { ...result, tab } : result;
      } finally {
        if (mine.running === running) mine.running = undefined;
      }
    });
  }

  /** The default executor first, then the named ones in the order they were made. */
  async list(): Promise<ExecutorList> {
    return { executors: await this.executorViews() };
  }

  /** Stops an executor's running call; a named one goes (its tab closed unless closeTab is false), the default one stays. */
  async delete(name: string, closeTab: boolean): Promise<void> {
    const executor = this.executors.get(name);
    if (!executor) throw new NotFoundError(`no executor named ${name}`);
    if (name === DEFAULT) {
      executor.running?.abort(`the executor ${name} was restarted`);
      return;
    }
    this.executors.delete(name);
    executor.running?.abort(`the executor ${name} was deleted`);
    if (closeTab && executor.targetId) {
      const targetId = executor.targetId;
      await cdpCommands(this.session.chromium, async (send) => void (await send('Target.closeTarget', { targetId }).catch(() => {}))).catch(() => {});
    }
  }

  stop(): void {
    for (const executor of this.executors.values()) executor.running?.abort('the session ended');
  }

  /** The tabs named executors own: the default one's `page` is never one of them. */
  private ownedTabs(): string[] {
    return [...this.executors.values()].flatMap((e) => (e.targetId ? [e.targetId] : []));
  }

  /** A named executor's tab, opened in the background when it has none (or it was closed); one DevTools connection either way. */
  private async tabOf(executor: ExecutorState): Promise<{ created: boolean; target_id: string }> {
    let tab = { created: false, target_id: executor.targetId ?? '' };
    await cdpCommands(this.session.chromium, async (send) => {
      if (executor.targetId && (await pagesOf(send)).has(executor.targetId)) return;
      const { targetId } = (await send('Target.createTarget', { url: 'about:blank', background: true })) as { targetId: string };
      tab = { created: true, target_id: targetId };
    });
    executor.targetId = tab.target_id;
    return tab;
  }

  /** The browser's open pages: URL by target id. */
  private async openPages(): Promise<Map<string, string>> {
    let pages = new Map<string, string>();
    await cdpCommands(this.session.chromium, async (send) => void (pages = await pagesOf(send)));
    return pages;
  }

  private async executorViews(): Promise<Executor[]> {
    const pages = await this.openPages().catch(() => new Map<string, string>());
    return [...this.executors.values()].map((e) => {
      const url = e.targetId ? pages.get(e.targetId) : undefined;
      return {
        name: e.name,
        busy: e.running !== undefined,
        created_at: e.createdAt.toISOString(),
        last_used_at: (e.lastUsedAt ?? e.createdAt).toISOString(),
        ...(e.targetId && url !== undefined ? { target_id: e.targetId, url } : {}),
      };
    });
  }
}

/** The browser's open pages, URL by target id, over a DevTools connection already open. */
async function pagesOf(send: (method: string, params?: object) => Promise<unknown>): Promise<Map<string, string>> {
  const { targetInfos } = (await send('Target.getTargets')) as { targetInfos: { targetId: string; type: string; url: string }[] };
  return new Map(targetInfos.filter((t) => t.type === 'page').map((t) => [t.targetId, t.url]));
}

const newExecutors: ServiceKind<PlaywrightExecutors> = (session) => new PlaywrightExecutors(session);

/** The session's Playwright executors; they end with it. */
export const executorsOf = (session: LiveSession): PlaywrightExecutors => session.service(newExecutors);
