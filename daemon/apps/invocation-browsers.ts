import type { BrowserSession } from '../../src/api/browsers.js';
import type { OrgRecord } from '../lib/owned-records.js';
import { sleep } from '../lib/procs.js';
import type { SessionManager } from '../sessions/manager.js';
import type { Invocations } from './invocations.js';

/** How long ending an invocation's browsers waits for those still launching for it. */
const BROWSER_LAUNCH_WAIT_MS = 120_000;

/**
 * The browsers of an invocation, on the session core: listed and ended by its routes, and ended
 * when it fails. Built after both (Invocations is one of the session core's features).
 */
export class InvocationBrowsers {
  constructor(
    private readonly invocations: Pick<Invocations, 'idOf' | 'launchingFor' | 'onFailed'>,
    private readonly sessions: Pick<SessionManager, 'listWhere' | 'endWhere'>,
  ) {
    invocations.onFailed((id) => this.endAll(id, 'invocation_ended'));
  }

  list(org: OrgRecord, invocationId: string): { browsers: BrowserSession[] } {
    const id = this.invocations.idOf(org, invocationId);
    return { browsers: this.sessions.listWhere(org, (s) => s.invocation_id === id) };
  }

  async delete(org: OrgRecord, invocationId: string): Promise<void> {
    const id = this.invocations.idOf(org, invocationId);
    await this.sessions.endWhere((s) => s.invocation_id === id, 'invocation_browsers_deleted');
  }

  /** Ends them, including any whose launch was under way (they refuse to start now). */
  private async endAll(id: string, reason: string): Promise<void> {
    const deadline = Date.now() + BROWSER_LAUNCH_WAIT_MS;
    for (;;) {
      await this.sessions.endWhere((s) => s.invocation_id === id, reason);
      if (!this.invocations.launchingFor(id) || Date.now() > deadline) return;
      await sleep(100);
    }
  }
}
