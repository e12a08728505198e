import {
  ASYNC_TIMEOUT,
  type CreateInvocationBody,
  type Invocation,
  type InvocationStatus,
  type ListInvocationsQuery,
  type UpdateInvocationBody,
} from '../../src/api/invocations.js';
import type { CreateBrowserBody } from '../../src/api/browsers.js';
import { BadRequestError, ConflictError, NotFoundError, ServiceUnavailableError } from '../../src/errors.js';
import { newId } from '../../src/ids.js';
import { within } from '../lib/procs.js';
import type { LaunchDemand } from '../lib/launch-demand.js';
import type { EventStream, StreamEvent } from '../lib/sse.js';
import { paginate, type ListPage } from '../lib/paging.js';
import type { FeatureLaunch, LaunchContext, SessionFeature } from '../sessions/features.js';
import type { OrgRecord } from '../lib/owned-records.js';
import type { Scope } from '../org/projects.js';
import type { Store } from '../lib/state/store.js';
import type { History } from '../lib/state/history.js';
import { ActionRun } from './action-run.js';
import type { ResolvedAction } from './deployments.js';
import { EventLog } from '../lib/event-log.js';
import { sinceTime } from '../../src/since-time.js';
import { appBaseEnv, harnessArgv } from './harness-command.js';
import type { Boxes } from '../box/boxes.js';
import type { Box } from '../box/box.js';
import type { AppSpares } from './app-spares.js';
import { nowNano } from './timestamps.js';

export interface InvocationRecord {
  id: string;
  org_id: string;
  deployment_id: string;
  app_name: string;
  /** The concrete version that ran ("latest" resolved at invocation time). */
  version: string;
  action_name: string;
  status: InvocationStatus;
  status_reason?: string;
  payload?: string;
  output?: string;
  started_at: string;
  finished_at?: string | null;
  async: boolean;
  /** How long the action may run before it is ended failed. */
  timeout_seconds: number;
  /** The API key minted for this invocation's action; revoked (and removed here) when it ends. */
  api_key_id?: string;
}

declare module '../lib/state/store.js' {
  interface State {
    invocations: InvocationRecord[];
  }
}

export interface InvocationsDeps {
  store: Store;
  home: string;
  deployments: {
    resolveAction(org: OrgRecord, app: string, version: string, action: string): ResolvedAction;
    /** Keeps the deployment's code while it runs; the returned function lets it go. */
    hold(deploymentId: string): () => void;
    /** The disk holding the deployment's installed code (made again from its archive if gone). */
    image(deploymentId: string): Promise<string>;
  };
  /** Where actions run: a box each. */
  boxes: Boxes;
  /** Boxes started ahead for deployments invoked lately; an invocation that takes one starts only its action. */
  spares?: Pick<AppSpares, 'take' | 'refill'>;
  /** API keys of an org: one is minted per invocation and revoked when it ends. */
  keys: { mintKey(scope: Scope): Promise<{ id: string; key: string }>; revokeKey(id: string): Promise<void> };
  publicUrl: () => string;
  /** Finished invocations: out of the state document, findable and listable until the retention drops them. */
  history: History<InvocationRecord>;
  log: (msg: string, extra?: object) => void;
  /** How long a sync POST /invocations waits before answering with the invocation still running. */
  syncCapMs?: number;
  /** Launches waited on: an action's own box starting is one (daemon/lib/launch-demand.ts). */
  demand?: LaunchDemand;
}

/** Kernel's cap on a synchronous invocation call. */
export const SYNC_CAP_MS = 100_000;
/** How many finished invocations keep their log lines in memory for late SSE subscribers, and how much of them. */
const FINISHED_LOGS_KEPT = 100;
const LOG_LIMITS = { maxEvents: 5000, maxChars: 1024 * 1024 };

/** The sync cap, lowered for tests with RBROWSE_SYNC_INVOCATION_CAP_MS (read at daemon start). */
export function syncCapMsFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = Number(env.RBROWSE_SYNC_INVOCATION_CAP_MS);
  return Number.isInteger(raw) && raw > 0 ? raw : SYNC_CAP_MS;
}

/** The end an invocation reaches: the action's own, a PATCH, a timeout or the daemon stopping. */
interface Final {
  status: 'succeeded' | 'failed';
  output?: string;
  reason?: string;
  /** The action's process ended by itself: only what it may have left behind remains to be swept. */
  fromChild?: boolean;
}

interface Active {
  record: InvocationRecord;
  org: Scope;
  events: EventLog;
  run?: ActionRun;
  /** The box started ahead for it, until its action starts there (or its end stops it). */
  spare?: Box;
  timer?: NodeJS.Timeout;
  /** Set by the first end decided; every later one (the child's exit after a PATCH killed it) joins it. */
  settling?: Promise<void>;
  done: Promise<void>;
  markDone: () => void;
  /** Lets the deployment's directory go (a redeploy may remove it once nothing runs from it). */
  unhold: () => void;
}

const isTerminal = (status: InvocationStatus) => status === 'succeeded' || status === 'failed';

/**
 * Invocations of deployed apps' actions, each run in a child process of its own (ActionRun), and
 * the session feature that ties browsers to an invocation: created with its id, they end with it.
 */
export class Invocations implements SessionFeature {
  private readonly active = new Map<string, Active>();
  /** Event logs of running and recently finished invocations, for SSE replay. */
  private readonly logs = new Map<string, EventLog>();
  /** Sessions launching for an invocation, not yet in the store: its end waits for them. */
  private readonly launching = new Map<string, Set<string>>();
  /** Sweeps for what finished actions left behind (escaped descendants), awaited by close(). */
  private readonly sweeps = new Set<Promise<void>>();
  /** Told of an invocation that failed, and waited for: its browsers end with it (InvocationBrowsers). */
  private readonly failedListeners: ((id: string) => Promise<void>)[] = [];
  private closing = false;
  /** Actions whose own box is starting (no spare had one ready). */
  private startingBoxes = 0;

  constructor(private readonly deps: InvocationsDeps) {
    deps.store.collection('invocations');
    deps.demand?.add(() => this.busy);
  }

  /** The session core is built on its features, this one among them: it subscribes here as it is built. */
  onFailed(listener: (id: string) => Promise<void>): void {
    this.failedListeners.push(listener);
  }

  /** Browsers launching for the invocation, not yet in the store: ending its browsers waits for them. */
  launchingFor(id: string): number {
    return this.launching.get(id)?.size ?? 0;
  }

  /** At start: what a stopped or crashed daemon left running ended with it (the reaper killed the children). */
  async recover(): Promise<void> {
    const orphans = this.deps.store.data.invocations.filter((r) => !isTerminal(r.status));
    const keys = orphans.flatMap((r) => (r.api_key_id ? [r.api_key_id] : []));
    for (const r of orphans) {
      r.status = 'failed';
      r.status_reason = 'the daemon stopped while the invocation ran';
      r.finished_at = nowNano();
      delete r.api_key_id;
    }
    // Every one is finished now (a state file from before the history holds finished ones too).
    await this.retire([...this.deps.store.data.invocations]);
    for (const key of keys) await this.deps.keys.revokeKey(key);
    if (orphans.length) this.deps.log('invocations failed by a daemon restart', { count: orphans.length });
  }

  async create(org: Scope, body: CreateInvocationBody): Promise<{ accepted: boolean; invocation: Invocation }> {
    if (body.payload !== undefined) assertPayload(body.payload);
    if (this.closing) throw new ServiceUnavailableError('the daemon is stopping');
    const action = this.deps.deployments.resolveAction(org, body.app_name, body.version, body.action_name);
    const spare = this.deps.spares?.take(action.deployment_id);
    const record: InvocationRecord = {
      id: spare?.invocationId ?? newId(),
      org_id: org.id,
      deployment_id: action.deployment_id,
      app_name: action.app_name,
      version: action.version,
      action_name: action.action_name,
      status: 'queued',
      started_at: nowNano(),
      finished_at: null,
      ...(body.payload !== undefined ? { payload: body.payload } : {}),
      async: body.async ?? false,
      // The spec applies async_timeout_seconds to async calls only; a sync one gets the default.
      timeout_seconds: (body.async && body.async_timeout_seconds) || ASYNC_TIMEOUT.default,
    };
    try {
      await this.deps.store.update((s) => void s.invocations.push(record));
    } catch (err) {
      void spare?.box.stop();
      throw err;
    }
    const inv = this.track(record, org, this.deps.deployments.hold(action.deployment_id));
    inv.spare = spare?.box;
    const queued = this.toApi(record);
    void this.run(inv, action);
    if (record.async) return { accepted: true, invocation: queued };
    await within(this.deps.syncCapMs ?? SYNC_CAP_MS, inv.done);
    return { accepted: false, invocation: this.toApi(record) };
  }

  /** True while an action's own box starts: boxes started ahead wait, so they never slow one. */
  get busy(): boolean {
    return this.startingBoxes > 0;
  }

  get(org: OrgRecord, id: string): Invocation {
    return this.toApi(this.find(org, id));
  }

  /** How many of the owner's invocations are queued or running. */
  unfinishedOf(owner: string): number {
    return this.deps.store.data.invocations.filter((r) => r.org_id === owner && !isTerminal(r.status)).length;
  }

  /** The org's queued and running invocations, oldest first (rbrowse watch shows them). */
  unfinished(org: OrgRecord): Invocation[] {
    return this.deps.store.data.invocations.filter((r) => r.org_id === org.id && !isTerminal(r.status)).map((r) => this.toApi(r));
  }

  list(org: OrgRecord, q: ListInvocationsQuery): ListPage<Invocation> {
    const since = sinceTime(q.since);
    const matches = this.deps.history
      .allWith(this.deps.store.data.invocations)
      .filter(
        (r) =>
          r.org_id === org.id &&
          (q.app_name === undefined || r.app_name === q.app_name) &&
          (q.version === undefined || r.version === q.version) &&
          (q.action_name === undefined || r.action_name === q.action_name) &&
          (q.status === undefined || r.status === q.status) &&
          (q.deployment_id === undefined || r.deployment_id === q.deployment_id) &&
          (q.query === undefined || [r.id, r.app_name, r.action_name].some((f) => f.includes(q.query!))) &&
          (since === undefined || Date.parse(r.started_at) >= since),
      );
    // Newest first.
    matches.sort((a, b) => b.started_at.localeCompare(a.started_at));
    return paginate(matches, q, (r) => this.toApi(r));
  }

  /** Sets the final status (any status may be replaced, as the spec's table says); a running action is stopped. */
  async update(org: OrgRecord, id: string, body: UpdateInvocationBody): Promise<Invocation> {
    const record = this.find(org, id);
    const inv = this.active.get(record.id);
    if (inv && !inv.settling) {
      const reason = body.status === 'failed' ? 'set to failed by PATCH /invocations/{id} while it ran' : undefined;
      await this.settle(inv, { status: body.status, output: body.output, reason });
    } else {
      await inv?.settling;
      record.status = body.status;
      if (body.output !== undefined) record.output = body.output;
      await this.deps.history.put(record);
      if (body.status === 'failed') await this.endBrowsers(record.id);
    }
    return this.toApi(record);
  }

  /** The SSE stream: what is kept is replayed, then it follows until a terminal state. */
  events(org: OrgRecord, id: string, since: string | undefined, stream: EventStream): void {
    const record = this.find(org, id);
    (this.logs.get(record.id) ?? this.finalOnly(record)).follow(stream, sinceTime(since));
  }

  /** The invocation's id, found as the org may see it (404 otherwise). */
  idOf(org: OrgRecord, id: string): string {
    return this.find(org, id).id;
  }

  /** Daemon stop: every running action is killed and its invocation failed. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all([...this.active.values()].map((inv) => this.settle(inv, { status: 'failed', reason: 'the daemon stopped' })));
    await Promise.all([...this.sweeps]);
  }

  // --- the session feature: browsers created with invocation_id ---

  check(org: OrgRecord, body: CreateBrowserBody): void {
    if (body.invocation_id === undefined) return;
    this.assertOpen(this.find(org, body.invocation_id));
  }

  /** Nothing of an invocation is decided at launch: a standby browser takes it on the same way. */
  handOver(ctx: LaunchContext): Promise<FeatureLaunch | undefined> {
    return this.launch(ctx);
  }

  async launch(ctx: LaunchContext): Promise<FeatureLaunch | undefined> {
    const id = ctx.body.invocation_id;
    if (id === undefined) return undefined;
    ctx.record.invocation_id = id;
    const pending = this.launching.get(id) ?? new Set<string>();
    this.launching.set(id, pending.add(ctx.record.id));
    return {
      // The invocation may have ended while Chromium started: the session must not outlive it.
      started: async () => this.assertOpen(this.find(ctx.org, id)),
      release: () => {
        pending.delete(ctx.record.id);
        if (!pending.size && this.launching.get(id) === pending) this.launching.delete(id);
      },
    };
  }

  // --- internals ---

  private track(record: InvocationRecord, org: Scope, unhold: () => void): Active {
    let markDone!: () => void;
    const done = new Promise<void>((r) => (markDone = r));
    const inv: Active = { record, org, events: new EventLog(LOG_LIMITS), done, markDone, unhold };
    this.active.set(record.id, inv);
    this.logs.set(record.id, inv.events);
    this.emitState(inv);
    return inv;
  }

  private async run(inv: Active, action: ResolvedAction): Promise<void> {
    const { record } = inv;
    try {
      const key = await this.deps.keys.mintKey(inv.org);
      if (inv.settling) return await this.deps.keys.revokeKey(key.id);
      // From here to the child's start nothing awaits, so an end decided meanwhile finds both.
      record.api_key_id = key.id;
      const image = await this.deps.deployments.image(action.deployment_id);
      if (inv.settling) return await this.deps.keys.revokeKey(key.id);
      const box = inv.spare;
      inv.spare = undefined;
      if (!box) this.startingBoxes++;
      inv.run = await ActionRun.start({
        box,
        boxes: this.deps.boxes,
        id: markerOf(record.id),
        image,
        argv: harnessArgv('run', action.entrypoint_rel_path, action.app_name, action.action_name),
        env: {
          ...appBaseEnv(),
          ...action.env_vars,
          KERNEL_API_KEY: key.key,
          // The daemon's port on the box's own loopback, which its agent forwards to the daemon.
          KERNEL_BASE_URL: inBoxUrl(this.deps.publicUrl()),
          ENTRYPOINT_RELPATH: action.entrypoint_rel_path,
          RBROWSE_INVOCATION_ID: record.id,
          ...(record.payload !== undefined ? { RBROWSE_PAYLOAD: record.payload } : {}),
        },
        onLog: (message) => inv.events.push({ event: 'log', message, timestamp: nowNano() }),
      }).finally(() => {
        if (!box) this.startingBoxes--;
        this.deps.spares?.refill(action.deployment_id);
      });
      if (inv.settling) await inv.run.stop();
      const limit = record.timeout_seconds;
      inv.timer = setTimeout(() => {
        void this.settle(inv, { status: 'failed', reason: `timed out after ${limit} s${record.async ? ' (async_timeout_seconds)' : ''}` });
      }, limit * 1000);
      inv.timer.unref();
      await this.deps.store.update(() => {
        if (!inv.settling) record.status = 'running';
      });
      if (!inv.settling) this.emitState(inv);
      await this.settle(inv, { ...(await inv.run.outcome), fromChild: true });
    } catch (err) {
      this.deps.log('invocation could not start', { invocation: record.id, error: String(err) });
      await this.settle(inv, { status: 'failed', reason: `the action could not be started: ${(err as Error).message}` });
    }
  }

  private settle(inv: Active, end: Final): Promise<void> {
    inv.settling ??= this.finish(inv, end);
    return inv.settling;
  }

  /**
   * Stops the child (and, when it failed, the invocation's browsers), then records the end. A PATCH, timeout or daemon
   * stop waits until nothing of the action runs; when the action returned by itself, the /proc
   * sweep for descendants that left its process group (tens of ms) goes on after the answer.
   */
  private async finish(inv: Active, end: Final): Promise<void> {
    const { record } = inv;
    clearTimeout(inv.timer);
    try {
      // Ended before its action started: the box started ahead for it goes unused.
      const spare = inv.spare;
      inv.spare = undefined;
      await spare?.stop();
      const stopping = inv.run?.stop();
      if (end.fromChild && stopping) this.sweepInBackground(stopping);
      else await stopping;
      // A succeeded action's browsers live on, as on Kernel (an action may prepare a logged-in
      // browser for a person or a later step): until DELETE .../browsers, a PATCH to failed, their
      // own inactivity timeout or their DELETE. A failed one (error, timeout, PATCH, stop) takes them along.
      if (end.status === 'failed') await this.endBrowsers(record.id);
    } catch (err) {
      this.deps.log('invocation cleanup failed', { invocation: record.id, error: String(err) });
    }
    inv.unhold();
    const keyId = record.api_key_id;
    record.status = end.status;
    record.finished_at = nowNano();
    if (end.output !== undefined) record.output = end.output;
    if (end.reason !== undefined) record.status_reason = end.reason;
    delete record.api_key_id;
    await this.retire([record]);
    if (keyId) await this.deps.keys.revokeKey(keyId).catch((err) => this.deps.log('key revocation failed', { error: String(err) }));
    if (end.status === 'failed') {
      inv.events.push({
        event: 'error',
        error: { code: 'invocation_failed', message: end.reason ?? 'the invocation failed' },
        timestamp: nowNano(),
      });
    }
    this.emitState(inv);
    inv.events.finish();
    this.active.delete(record.id);
    this.forgetOldLogs();
    inv.markDone();
  }

  private sweepInBackground(stopping: Promise<void>): void {
    const sweep = stopping.catch((err) => this.deps.log('action sweep failed', { error: String(err) }));
    this.sweeps.add(sweep);
    void sweep.finally(() => this.sweeps.delete(sweep));
  }

  /** Ends the invocation's browsers, including any whose launch was under way (they refuse to start now). */
  private async endBrowsers(id: string): Promise<void> {
    await Promise.all(this.failedListeners.map((listener) => listener(id)));
  }

  private emitState(inv: Active): void {
    inv.events.push(stateEvent(this.toApi(inv.record)));
  }

  /** An invocation whose log is no longer kept (finished long ago, or before a restart): its final state. */
  private finalOnly(record: InvocationRecord): EventLog {
    const log = new EventLog();
    log.push(stateEvent(this.toApi(record)));
    log.finish();
    return log;
  }

  private forgetOldLogs(): void {
    const finished = [...this.logs.keys()].filter((id) => !this.active.has(id));
    for (const id of finished.slice(0, Math.max(0, finished.length - FINISHED_LOGS_KEPT))) this.logs.delete(id);
  }

  private assertOpen(record: InvocationRecord): void {
    const ending = this.active.get(record.id)?.settling !== undefined;
    if (isTerminal(record.status) || ending) {
      throw new ConflictError(`invocation ${record.id} has ended (${record.status}); browsers can no longer join it`);
    }
  }

  /** Finished invocations leave the state document for the history. */
  private retire(records: InvocationRecord[]): Promise<void> {
    return this.deps.store.retire('invocations', records, this.deps.history);
  }

  private find(org: OrgRecord, id: string): InvocationRecord {
    const found = this.deps.store.data.invocations.find((r) => r.id === id) ?? this.deps.history.get(id);
    const record = found?.org_id === org.id ? found : undefined;
    if (!record) throw new NotFoundError(`invocation ${id} not found`);
    return record;
  }

  private toApi(r: InvocationRecord): Invocation {
    return {
      id: r.id,
      app_name: r.app_name,
      version: r.version,
      action_name: r.action_name,
      status: r.status,
      started_at: r.started_at,
      finished_at: r.finished_at ?? null,
      ...(r.payload !== undefined ? { payload: r.payload } : {}),
      ...(r.output !== undefined ? { output: r.output } : {}),
      ...(r.status_reason !== undefined ? { status_reason: r.status_reason } : {}),
    };
  }
}

/** The marker (RBROWSE_SESSION value) an invocation's processes carry. */
export const markerOf = (invocationId: string) => `invocation-${invocationId}`;

/** The daemon's URL as a box reaches it: its port, on the box's loopback. */
function inBoxUrl(publicUrl: string): string {
  const url = new URL(publicUrl);
  url.hostname = '127.0.0.1';
  return url.origin;
}

const stateEvent = (invocation: Invocation): StreamEvent => ({ event: 'invocation_state', invocation, timestamp: nowNano() });

/** Linux refuses an environment string over 128 KiB (MAX_ARG_STRLEN), and the payload travels in one. */
const MAX_PAYLOAD_BYTES = 128 * 1024 - 'RBROWSE_PAYLOAD='.length - 1;

function assertPayload(text: string): void {
  if (Buffer.byteLength(text) > MAX_PAYLOAD_BYTES) {
    throw BadRequestError.field('payload', `must be at most ${MAX_PAYLOAD_BYTES} bytes (it reaches the action through its environment)`);
  }
  try {
    JSON.parse(text);
  } catch {
    throw BadRequestError.field('payload', 'must be a JSON string');
  }
}
