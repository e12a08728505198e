import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { join } from 'node:path';
import type { Multipart } from '@fastify/multipart';
import {
  REGION,
  type App,
  type Deployment,
  type DeploymentStatus,
  type ListAppsQuery,
  type ListDeploymentsQuery,
} from '../../src/api/deployments.js';
import { BadRequestError, NotFoundError } from '../../src/errors.js';
import { newId } from '../../src/ids.js';
import { DEFAULT_UNZIP_LIMITS, extractZip } from '../lib/archive/unzip.js';
import { removeTree } from '../lib/fs-util.js';
import type { StorageQuotas } from '../org/storage.js';
import type { Scope } from '../org/projects.js';
import { tarOf } from '../lib/archive/tar-stream.js';
import type { Box } from '../box/box.js';
import type { Boxes } from '../box/boxes.js';
import { BOX_APP } from '../box/box-spec.js';
import { FileOps } from '../box/box-files.js';
import { outputOf } from '../box/box-process.js';
import { EventStream, type StreamEvent } from '../lib/sse.js';
import { paginate, type ListPage } from '../lib/paging.js';
import type { OrgRecord } from '../lib/owned-records.js';
import type { Store } from '../lib/state/store.js';
import { BuildError, fetchGitSource, installDependencies, installPythonDependencies, linkSdk, loadApps, type LoadedApp } from './build-steps.js';
import { BOX_NPMRC, npmSettings } from './npm-settings.js';
import { packageVersion } from '../box/box-runtime.js';
import { receiveDeploy } from './deploy-form.js';
import { EventLog } from '../lib/event-log.js';
import { sinceTime } from '../../src/since-time.js';
import { appBaseEnv, isPythonEntrypoint } from './harness-command.js';

export interface AppVersionRecord {
  /** The app version id of GET /apps and app_version_summary events. */
  id: string;
  name: string;
  actions: { name: string }[];
}

export interface DeploymentRecord {
  id: string;
  org_id: string;
  created_at: string;
  updated_at?: string;
  status: DeploymentStatus;
  status_reason?: string;
  entrypoint_rel_path: string;
  version: string;
  env_vars: Record<string, string>;
  /** The zip's sha256, or the fetched tree's once it is fetched. */
  source_checksum?: string;
  /** Where the code is fetched from, when it was not uploaded (its token is never stored). */
  source?: { url: string; ref: string; path?: string };
  /** What the entrypoint registers; filled when the deployment starts running. */
  apps: AppVersionRecord[];
}

declare module '../lib/state/store.js' {
  interface State {
    deployments: DeploymentRecord[];
  }
}

export interface ResolvedAction {
  deployment_id: string;
  app_name: string;
  /** The concrete version label ("latest" already resolved). */
  version: string;
  action_name: string;
  /** The entrypoint, relative to the app's directory (/app in its boxes), for ENTRYPOINT_RELPATH. */
  entrypoint_rel_path: string;
  env_vars: Record<string, string>;
}

/**
 * The box disk that holds a deployment's installed code (its image): kept once its build box has
 * ended, bound read-only at /app into each of its invocations' boxes.
 */
export const imageOf = (deploymentId: string) => `app-${deploymentId}`;

const TERMINAL: DeploymentStatus[] = ['running', 'failed', 'stopped'];
/** Build logs kept in memory, for the newest deployments. */
const MAX_KEPT_LOGS = 100;
/** Loading an app runs its top-level code: it must not need a real key then (one is given to actions). */
const LOAD_TIME_API_KEY = 'rbrowse-deploy-inspection';

const now = () => new Date().toISOString();

/**
 * Deployed app code. A deploy answers `queued` at once; in the background its zip (already
 * unpacked under `<dir>/<deployment id>/`) gets its dependencies installed, the daemon's
 * @onkernel/sdk when it has none, and is loaded once in a child to read its apps and actions; it
 * ends `running` or `failed` with the reason. Every step becomes `log` events. A running deploy of
 * the same app and version label replaces the older one, whose code is removed once no invocation
 * holds it.
 */
export class Deployments {
  private readonly logs = new Map<string, EventLog>();
  private readonly builds = new Map<string, { abort: AbortController; done: Promise<void> }>();
  /** The tokens of sources still to fetch, in memory until their fetch: never written anywhere. */
  private readonly sourceTokens = new Map<string, string>();
  private readonly holds = new Map<string, number>();
  /** Images being made again from their archives (after a reboot), by deployment. */
  private readonly restoring = new Map<string, Promise<string>>();

  /** Told when a deployment no longer runs (parts built on this one subscribe as they are built). */
  private readonly stoppedListeners: ((deploymentId: string) => void)[] = [];

  constructor(
    private readonly deps: {
      store: Store;
      dir: string;
      boxes: Boxes;
      log: (msg: string, extra?: object) => void;
      storage?: StorageQuotas;
    },
  ) {
    deps.store.collection('deployments');
    // A stopped or failed deployment's code is gone (discard): the others' count and take room.
    const kept = (owners: ReadonlySet<string>) =>
      deps.store.data.deployments.filter((d) => owners.has(d.org_id) && d.status !== 'stopped' && d.status !== 'failed');
    deps.storage?.register('deployments', {
      paths: (owners) => kept(owners).map((d) => this.appDir(d.id)),
      count: (owners) => kept(owners).length,
    });
  }

  /** A deployment no longer runs: what was started ahead for its invocations goes. */
  onStopped(listener: (deploymentId: string) => void): void {
    this.stoppedListeners.push(listener);
  }

  /** Whether the deployment can be invoked. */
  isRunning(deploymentId: string): boolean {
    return this.deps.store.data.deployments.some((d) => d.id === deploymentId && d.status === 'running');
  }

  /**
   * At daemon start: a build the previous daemon did not finish is failed (its processes were
   * killed by the reaper), and only running deployments keep their code.
   */
  async recover(): Promise<void> {
    const interrupted = this.deps.store.data.deployments.filter((d) => !TERMINAL.includes(d.status));
    if (interrupted.length) {
      await this.deps.store.update(() => {
        for (const d of interrupted)
          Object.assign(d, { status: 'failed', status_reason: 'the daemon restarted during the deployment', updated_at: now() });
      });
    }
    const keep = new Set(this.deps.store.data.deployments.filter((d) => d.status === 'running').map((d) => d.id));
    const entries = await readdir(this.deps.dir).catch(() => [] as string[]);
    await Promise.all(entries.filter((e) => !keep.has(e)).map((e) => removeTree(join(this.deps.dir, e), this.deps.log)));
  }

  /** The box disks a daemon start keeps: the images of running deployments. */
  keepsDisk(id: string): boolean {
    return this.deps.store.data.deployments.some((d) => d.status === 'running' && imageOf(d.id) === id);
  }

  /**
   * The disk of a running deployment's image, made again from its archive when it is gone (the
   * machine restarted): in a box of its own, as its user.
   */
  async image(deploymentId: string): Promise<string> {
    const image = imageOf(deploymentId);
    if (existsSync(`${this.deps.boxes.diskDir(image)}/app`)) return image;
    let restoring = this.restoring.get(deploymentId);
    if (!restoring) {
      restoring = (async () => {
        const box = await this.deps.boxes.start({ kind: 'app', id: image, app: { writable: true } });
        try {
          await new FileOps(box).unpack(BOX_APP, createReadStream(this.archiveOf(deploymentId)));
        } catch (err) {
          await box.stop();
          throw err;
        }
        await this.deps.boxes.stopKeepingDisk(box);
        return image;
      })().finally(() => this.restoring.delete(deploymentId));
      this.restoring.set(deploymentId, restoring);
    }
    return restoring;
  }

  /**
   * POST /deployments: receives and unpacks the zip (400 for a bad one), or takes the `source` to
   * fetch, then builds in the background.
   */
  async create(org: OrgRecord, parts: AsyncIterable<Multipart>): Promise<Deployment> {
    const id = newId();
    this.deps.storage?.assertRoomFor(org as Scope, 'deployments');
    // The organization's room on the disk bounds the zip, then its unpacking, as their bytes come.
    const room = await this.deps.storage?.roomFor(org as Scope, 'the deployment');
    await mkdir(this.deps.dir, { recursive: true, mode: 0o700 });
    const zipPath = join(this.deps.dir, `.upload-${id}.zip`);
    let unpacked: Awaited<ReturnType<typeof extractZip>> | undefined;
    let received: Awaited<ReturnType<typeof receiveDeploy>>;
    try {
      received = await receiveDeploy(parts, zipPath, room);
      await mkdir(this.appDir(id), { mode: 0o700 });
      if (!received.form.source) {
        const zipBytes = (await stat(zipPath)).size;
        unpacked = await extractZip(
          zipPath,
          this.sourceDir(id),
          'file',
          room ? { ...DEFAULT_UNZIP_LIMITS, room: { bytes: room.bytes - zipBytes, refusal: room.refusal } } : undefined,
        );
      }
    } catch (err) {
      await removeTree(this.appDir(id), this.deps.log);
      throw err;
    } finally {
      await rm(zipPath, { force: true });
    }
    const { form, checksum } = received;
    if (unpacked && !unpacked.files.includes(form.entrypoint_rel_path)) {
      await removeTree(this.appDir(id), this.deps.log);
      throw BadRequestError.field('entrypoint_rel_path', missingEntrypoint(form.entrypoint_rel_path, unpacked.files, 'the zip'));
    }
    const source = form.source;
    const rec: DeploymentRecord = {
      id,
      org_id: org.id,
      created_at: now(),
      status: 'queued',
      entrypoint_rel_path: form.entrypoint_rel_path,
      version: form.version ?? 'latest',
      env_vars: form.env_vars ?? {},
      ...(checksum ? { source_checksum: checksum } : {}),
      ...(source ? { source: { url: source.url, ref: source.ref, ...(source.path ? { path: source.path } : {}) } } : {}),
      apps: [],
    };
    if (source?.auth) this.sourceTokens.set(id, source.auth.token);
    await this.deps.store.update((s) => s.deployments.push(rec));
    this.emitState(rec);
    if (unpacked) this.emitLog(rec, `received ${unpacked.files.length} files (${unpacked.bytes} bytes, sha256 ${checksum})`);
    const queued = this.view(rec);
    this.startBuild(rec);
    return queued;
  }

  get(org: OrgRecord, id: string): Deployment {
    return this.view(this.find(org, id));
  }

  list(org: OrgRecord, q: ListDeploymentsQuery): ListPage<Deployment> {
    if (q.app_version !== undefined && q.app_name === undefined) throw BadRequestError.field('app_version', 'needs app_name');
    const all = this.ofOrg(org).filter(
      (d) =>
        (q.app_name === undefined || d.apps.some((a) => a.name === q.app_name)) &&
        (q.app_version === undefined || d.version === q.app_version) &&
        (!q.query || d.id === q.query || d.apps.some((a) => a.name.includes(q.query!))),
    );
    return paginate(all, q, (d) => this.view(d));
  }

  /** DELETE: stops the deployment (cancelling its build); its code goes once no invocation holds it. */
  async remove(org: OrgRecord, id: string): Promise<void> {
    const rec = this.find(org, id);
    if (rec.status === 'stopped' || rec.status === 'failed') return;
    const build = this.builds.get(rec.id);
    build?.abort.abort();
    await build?.done;
    await this.setStatus(rec, 'stopped', 'deleted');
    await this.discard(rec);
  }

  /** GET /deployments/{id}/events: the history so far, then live events until a terminal state. */
  follow(org: OrgRecord, id: string, since?: string): EventStream {
    const rec = this.find(org, id);
    const from = sinceTime(since);
    const stream = new EventStream();
    this.logOf(rec).follow(stream, from);
    return stream;
  }

  /** GET /apps: the app versions of running deployments, newest first. */
  listApps(org: OrgRecord, q: ListAppsQuery): ListPage<App> {
    const all = this.ofOrg(org)
      .filter((d) => d.status === 'running')
      .flatMap((d) => d.apps.map((a) => this.appView(d, a)))
      .filter(
        (a) =>
          (q.app_name === undefined || a.app_name === q.app_name) &&
          (q.version === undefined || a.version === q.version) &&
          (!q.query || a.id === q.query || a.app_name.includes(q.query)),
      );
    return paginate(all, q);
  }

  /**
   * The running deployment serving an action: `latest` is the newest running deployment of the
   * app, any other version the running deployment with that label. 404 with the reason otherwise.
   */
  resolveAction(org: OrgRecord, app_name: string, version: string, action_name: string): ResolvedAction {
    const withApp = this.ofOrg(org).filter((d) => d.status === 'running' && d.apps.some((a) => a.name === app_name));
    if (withApp.length === 0) throw new NotFoundError(`app ${app_name} not found`);
    const rec = version === 'latest' ? withApp[0] : withApp.find((d) => d.version === version);
    if (!rec) throw new NotFoundError(`version ${version} of app ${app_name} not found`);
    const app = rec.apps.find((a) => a.name === app_name)!;
    if (!app.actions.some((a) => a.name === action_name)) {
      throw new NotFoundError(`action ${action_name} not found in app ${app_name} (actions: ${app.actions.map((a) => a.name).join(', ')})`);
    }
    return {
      deployment_id: rec.id,
      app_name,
      version: rec.version,
      action_name,
      entrypoint_rel_path: rec.entrypoint_rel_path,
      env_vars: { ...rec.env_vars },
    };
  }

  /**
   * Keeps a deployment's code on disk while an invocation runs it, even when a newer deploy
   * replaces it meanwhile; call the returned function (once) when the invocation ends.
   */
  hold(deploymentId: string): () => void {
    this.holds.set(deploymentId, (this.holds.get(deploymentId) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.holds.get(deploymentId) ?? 1) - 1;
      if (left > 0) return void this.holds.set(deploymentId, left);
      this.holds.delete(deploymentId);
      const rec = this.deps.store.data.deployments.find((d) => d.id === deploymentId);
      if (rec && rec.status !== 'running') void this.discard(rec);
    };
  }

  /**
   * Daemon stop: builds in progress are cancelled (their processes killed) and marked failed; the
   * running deployments' images (disks in memory, mounted under /run) are let go, nothing of an
   * app stays mounted: the next start makes each again from its archive when first invoked.
   */
  async close(): Promise<void> {
    const pending = [...this.builds.keys()];
    for (const b of this.builds.values()) b.abort.abort();
    await Promise.all([...this.builds.values()].map((b) => b.done));
    for (const id of pending) {
      const rec = this.deps.store.data.deployments.find((d) => d.id === id);
      if (rec && !TERMINAL.includes(rec.status)) await this.fail(rec, 'the daemon stopped during the deployment');
    }
    await Promise.all([...this.restoring.values()].map((r) => r.catch(() => {})));
    for (const d of this.deps.store.data.deployments.filter((x) => x.status === 'running')) await this.deps.boxes.dropDisk(imageOf(d.id));
  }

  private startBuild(rec: DeploymentRecord): void {
    const abort = new AbortController();
    const done = this.build(rec, abort.signal)
      .catch((err) => this.deps.log('deployment build failed unexpectedly', { id: rec.id, error: String(err) }))
      .finally(() => this.builds.delete(rec.id));
    this.builds.set(rec.id, { abort, done });
  }

  /**
   * The build, in a box of its own as an unprivileged user, like everything of an app: the code
   * goes in at /app, `npm ci` or `npm install` runs there (its lifecycle scripts included), the
   * entrypoint is loaded to list its apps. The box's disk, with /app installed, is kept as the
   * deployment's image, and a copy of /app is archived for the daemon's next start after a reboot.
   */
  private async build(rec: DeploymentRecord, signal: AbortSignal): Promise<void> {
    const source = this.sourceDir(rec.id);
    const log = (line: string) => this.emitLog(rec, line);
    const env = appBaseEnv();
    // Taken out at once: a build that fails or is cancelled before its fetch leaves no token behind.
    const token = this.sourceTokens.get(rec.id);
    this.sourceTokens.delete(rec.id);
    let apps: LoadedApp[];
    let box: Box | undefined;
    try {
      await this.setStatus(rec, 'in_progress');
      const python = isPythonEntrypoint(rec.entrypoint_rel_path);
      // The daemon user's npm settings as they are now: the box sees them without credentials.
      const npm = python ? undefined : await npmSettings();
      box = await this.deps.boxes.start({
        kind: 'app',
        id: imageOf(rec.id),
        app: { writable: true },
        ...(npm ? { etcFiles: [[BOX_NPMRC, npm.build], ...npm.files] } : {}),
      });
      const files = new FileOps(box);
      const opts = { box, env, signal, log };
      if (rec.source) await this.fetchSource(rec, token, files, opts);
      else await files.unpack(BOX_APP, await tarOf(source));
      if (!npm) await installPythonDependencies(source, opts);
      else {
        await installDependencies(source, { ...opts, npm, sdkVersion: packageVersion('@onkernel/sdk') });
        await linkSdk(opts);
      }
      apps = await loadApps(rec.entrypoint_rel_path, { ...opts, env: { ...env, KERNEL_API_KEY: LOAD_TIME_API_KEY, ...rec.env_vars } });
      // Each invocation runs as a user of its own: the code must be readable by others.
      await outputOf(box.spawn(['chmod', '-R', 'a+rX', '--', BOX_APP]));
      await packApp(files, this.archiveOf(rec.id));
      // Whatever the build started and left behind (a postinstall's daemon) ends with its box;
      // the disk, /app installed, stays as the image.
      await this.deps.boxes.stopKeepingDisk(box);
      box = undefined;
      await removeTree(source, this.deps.log);
    } catch (err) {
      await box?.stop();
      await this.deps.boxes.dropDisk(imageOf(rec.id));
      if (signal.aborted) return;
      if (!(err instanceof BuildError)) this.deps.log('deployment build error', { id: rec.id, error: String(err), stack: (err as Error).stack });
      await this.fail(rec, err instanceof BuildError ? err.message : `internal error: ${(err as Error).message}`);
      return;
    }
    if (!signal.aborted) await this.markRunning(rec, apps);
  }

  /**
   * A `source` deployment's code: fetched by git into the build box's /app, then a copy on the
   * daemon's side, unpacked from a zip of it as an upload's would be (the build reads its
   * package.json and lockfile there, and its limits hold). Its entrypoint must be there.
   */
  private async fetchSource(
    rec: DeploymentRecord,
    token: string | undefined,
    files: FileOps,
    opts: { box: Box; env: Record<string, string>; signal: AbortSignal; log: (line: string) => void },
  ): Promise<void> {
    const checksum = await fetchGitSource({ ...rec.source!, ...(token ? { token } : {}) }, opts);
    const zipPath = join(this.deps.dir, `.fetched-${rec.id}.zip`);
    try {
      await pipeline(await files.zipDirectory(BOX_APP), createWriteStream(zipPath, { mode: 0o600 }));
      const unpacked = await extractZip(zipPath, this.sourceDir(rec.id), 'source');
      if (!unpacked.files.includes(rec.entrypoint_rel_path)) {
        throw new BuildError(missingEntrypoint(rec.entrypoint_rel_path, unpacked.files, 'the repository'));
      }
      this.emitLog(rec, `fetched ${unpacked.files.length} files (${unpacked.bytes} bytes, sha256 ${checksum})`);
    } catch (err) {
      if (err instanceof BadRequestError) throw new BuildError(`the fetched source cannot be used: ${err.message}`);
      throw err;
    } finally {
      await rm(zipPath, { force: true });
    }
    await this.deps.store.update(() => void (rec.source_checksum = checksum));
  }

  /**
   * The deployment runs; an older running deployment of the same app and version label is
   * stopped (or this one, when a newer one finished first).
   */
  private async markRunning(rec: DeploymentRecord, apps: LoadedApp[]): Promise<void> {
    const all = this.deps.store.data.deployments;
    const overlaps = all.filter(
      (d) =>
        d !== rec &&
        d.org_id === rec.org_id &&
        d.status === 'running' &&
        d.version === rec.version &&
        d.apps.some((a) => apps.some((b) => b.name === a.name)),
    );
    const newer = overlaps.find((d) => all.indexOf(d) > all.indexOf(rec));
    const replaced = newer ? [] : overlaps;
    const at = now();
    await this.deps.store.update(() => {
      rec.apps = apps.map((a) => ({ id: newId(), name: a.name, actions: a.actions.map(({ name }) => ({ name })) }));
      for (const old of replaced) Object.assign(old, { status: 'stopped', status_reason: `replaced by deployment ${rec.id}`, updated_at: at });
    });
    for (const app of rec.apps) {
      this.logOf(rec).push({ event: 'app_version_summary', ...this.summary(rec, app), timestamp: now() });
    }
    if (newer) await this.setStatus(rec, 'stopped', `replaced by deployment ${newer.id}`);
    else await this.setStatus(rec, 'running');
    for (const old of replaced) {
      this.emitState(old);
      await this.discard(old);
    }
    if (newer) await this.discard(rec);
  }

  /** A failed deployment's code is removed before the failure shows: nothing can run it. */
  private async fail(rec: DeploymentRecord, reason: string): Promise<void> {
    await this.discard(rec);
    this.logOf(rec).push({ event: 'error', error: { code: 'deployment_failed', message: reason }, timestamp: now() });
    await this.setStatus(rec, 'failed', reason);
  }

  private async setStatus(rec: DeploymentRecord, status: DeploymentStatus, reason?: string): Promise<void> {
    await this.deps.store.update(() => {
      rec.status = status;
      rec.updated_at = now();
      if (reason === undefined) delete rec.status_reason;
      else rec.status_reason = reason;
    });
    this.emitState(rec);
  }

  /** Removes a stopped or failed deployment's code, unless an invocation still holds it. */
  private async discard(rec: DeploymentRecord): Promise<void> {
    if (rec.status === 'running') return;
    for (const listener of this.stoppedListeners) listener(rec.id);
    if (this.holds.has(rec.id)) return;
    await this.deps.boxes.dropDisk(imageOf(rec.id));
    await removeTree(this.appDir(rec.id), this.deps.log);
  }

  private emitState(rec: DeploymentRecord): void {
    const log = this.logOf(rec);
    log.push({ event: 'deployment_state', deployment: this.view(rec), timestamp: now() });
    if (TERMINAL.includes(rec.status)) log.finish();
  }

  private emitLog(rec: DeploymentRecord, message: string): void {
    this.logOf(rec).push({ event: 'log', message, timestamp: now() });
  }

  /** The deployment's events; after a daemon restart, a replay of its summaries and state. */
  private logOf(rec: DeploymentRecord): EventLog {
    let log = this.logs.get(rec.id);
    if (log) return log;
    log = new EventLog();
    this.logs.set(rec.id, log);
    this.forgetOldLogs();
    if (rec.status !== 'queued') {
      const at = rec.updated_at ?? rec.created_at;
      for (const app of rec.apps) log.push({ event: 'app_version_summary', ...this.summary(rec, app), timestamp: at });
      log.push({ event: 'deployment_state', deployment: this.view(rec), timestamp: at });
      if (TERMINAL.includes(rec.status)) log.finish();
    }
    return log;
  }

  /**
   * Settled deployments beyond the newest MAX_KEPT_LOGS lose their build log (a follow then replays
   * their summaries and state), so a daemon deploying all day does not keep every log.
   */
  private forgetOldLogs(): void {
    let excess = this.logs.size - MAX_KEPT_LOGS;
    for (const id of this.logs.keys()) {
      if (excess <= 0) return;
      const rec = this.deps.store.data.deployments.find((d) => d.id === id);
      if (rec && !TERMINAL.includes(rec.status)) continue;
      this.logs.delete(id);
      excess--;
    }
  }

  private summary(rec: DeploymentRecord, app: AppVersionRecord): Omit<StreamEvent, 'event'> {
    const { env_vars: _env, deployment: _deployment, ...summary } = this.appView(rec, app);
    return summary;
  }

  private find(org: OrgRecord, id: string): DeploymentRecord {
    const rec = this.deps.store.data.deployments.find((d) => d.id === id && d.org_id === org.id);
    if (!rec) throw new NotFoundError(`deployment ${id} not found`);
    return rec;
  }

  /** The org's deployments, newest first. */
  private ofOrg(org: OrgRecord): DeploymentRecord[] {
    return this.deps.store.data.deployments.filter((d) => d.org_id === org.id).reverse();
  }

  /** A deployment's files on the daemon's side: the unpacked upload while it builds (src/), then the archive of its installed code. */
  private appDir(id: string): string {
    return join(this.deps.dir, id);
  }

  private sourceDir(id: string): string {
    return join(this.appDir(id), 'src');
  }

  private archiveOf(id: string): string {
    return join(this.appDir(id), 'app.tar');
  }

  private view(rec: DeploymentRecord): Deployment {
    const { org_id: _org, apps, env_vars, source, ...fields } = rec;
    return {
      ...fields,
      region: REGION,
      source_type: source ? 'github' : 'file',
      ...(source ? { source_url: source.url, source_ref: source.ref, ...(source.path ? { source_path: source.path } : {}) } : {}),
      env_vars: redacted(env_vars),
      app_names: apps.map((a) => a.name),
    };
  }

  private appView(rec: DeploymentRecord, app: AppVersionRecord): App {
    return {
      id: app.id,
      app_name: app.name,
      version: rec.version,
      region: REGION,
      // Kernel's schemas of an action: null, its answer when it cannot generate them (no app's types are read here).
      actions: app.actions.map(({ name }) => ({ name, input_schema: null, output_schema: null })),
      env_vars: redacted(rec.env_vars),
      deployment: rec.id,
    };
  }
}

/** Kernel answers API-key callers every variable with an empty value. */
function redacted(env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.keys(env).map((k) => [k, '']));
}

/** /app of a build box, archived (as the box's user, inside it) into `archive` on the daemon's side. */
async function packApp(files: FileOps, archive: string): Promise<void> {
  const temp = `${archive}.tmp`;
  const packed = files.pack('cd -- "$1" && exec tar -c -f - .', [BOX_APP]);
  try {
    await pipeline(packed.stream, createWriteStream(temp, { mode: 0o600 }));
    await packed.done;
    await rename(temp, archive);
  } catch (err) {
    await rm(temp, { force: true });
    throw new BuildError(`the installed app could not be archived: ${(err as Error).message}`);
  }
}

/** Why an entrypoint is not there, with the top level of what is. */
function missingEntrypoint(entrypoint: string, files: string[], where: string): string {
  const top = [...new Set(files.map((f) => f.split('/')[0]!.concat(f.includes('/') ? '/' : '')))].slice(0, 10);
  return `${entrypoint} is not a file in ${where} (its top level: ${top.join(', ') || 'nothing'})`;
}
