import { RateLimitError } from '../../src/errors.js';
import type { Projects, Scope } from './projects.js';

/** How long a refused create is told to wait: a cap frees only when something of the project ends. */
const RETRY_AFTER_S = 5;

/** What an owner (see Scope) runs now, counted by the modules that run it. */
export interface Usage {
  /** Browsers: live sessions not of a pool, plus every pool's size (a pool reserves its browsers). */
  sessions(owner: string): number;
  /** Invocations queued or running. */
  invocations(owner: string): number;
}

type Kind = 'sessions' | 'invocations';

/**
 * The concurrency caps of Kernel's limits: browsers at once per organization (its limit: the
 * machine's capacity unless set) and per project (its own cap, else the organization's default),
 * invocations at once per project. A create holds its place from the check until what it makes is
 * counted, so concurrent creates cannot all slip under a cap. Refusals are 429
 * rate_limit_exceeded with Retry-After, as the launch queue's (admission.ts) are.
 */
export class Quotas {
  private readonly held = new Map<string, number>();

  constructor(
    private readonly deps: {
      projects: Projects;
      usage: Usage;
      orgMaxSessions: number;
    },
  ) {}

  /**
   * Holds `n` more browsers for the scope, or refuses. Call the result once they are counted by
   * usage (registered) or will not be made.
   */
  holdSessions(scope: Scope, n = 1): () => void {
    if (n <= 0) return () => {};
    const caps = this.deps.projects.capsOf(scope);
    const project = this.count('sessions', scope.id);
    if (caps.sessions !== null && project + n > caps.sessions) {
      throw this.refusal(`the project's limit of ${caps.sessions} concurrent browsers is reached (${project} running or reserved)`);
    }
    let org = 0;
    for (const owner of this.deps.projects.ownersOf(scope.org_id)) org += this.count('sessions', owner);
    if (org + n > this.deps.orgMaxSessions) {
      throw this.refusal(`the organization's limit of ${this.deps.orgMaxSessions} concurrent browsers is reached (${org} running or reserved)`);
    }
    return this.hold('sessions', scope.id, n);
  }

  /** A pool's browser handed out: refused while the project is over its cap (lowered after the pool was made). */
  assertWithinSessions(scope: Scope): void {
    const cap = this.deps.projects.capsOf(scope).sessions;
    const used = this.count('sessions', scope.id);
    if (cap !== null && used > cap) throw this.refusal(`the project runs ${used} browsers, over its limit of ${cap}`);
  }

  holdInvocation(scope: Scope): () => void {
    const cap = this.deps.projects.capsOf(scope).invocations;
    const used = this.count('invocations', scope.id);
    if (cap !== null && used + 1 > cap) throw this.refusal(`the project's limit of ${cap} concurrent invocations is reached`);
    return this.hold('invocations', scope.id, 1);
  }

  /** Runs `work` holding what `hold` took, and gives it back however `work` ends. */
  static async holding<T>(release: () => void, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } finally {
      release();
    }
  }

  private count(kind: Kind, owner: string): number {
    return this.deps.usage[kind](owner) + (this.held.get(`${kind}/${owner}`) ?? 0);
  }

  private hold(kind: Kind, owner: string, n: number): () => void {
    const key = `${kind}/${owner}`;
    this.held.set(key, (this.held.get(key) ?? 0) + n);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.held.get(key) ?? 0) - n;
      if (left > 0) this.held.set(key, left);
      else this.held.delete(key);
    };
  }

  private refusal(message: string): RateLimitError {
    return new RateLimitError(message, RETRY_AFTER_S);
  }
}
