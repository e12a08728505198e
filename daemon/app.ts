import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { baseUrlFor, homePaths } from '../src/config.js';
import { NotFoundError } from '../src/errors.js';
import { MachineSize } from './sessions/machine-size.js';
import { Auth } from './org/auth.js';
import { ComputerControl } from './in-session/computer/computer.js';
import { DisplayAllocator } from './browser/xvfb.js';
import { ProcessLauncher } from './box/launcher.js';
import { Boxes } from './box/boxes.js';
import type { BoxSupport } from './box/support.js';
import { CdpGateway } from './http/gateways/cdp.js';
import { CdpRelay } from './http/gateways/cdp-relay.js';
import { CDP_PATH, WEBDRIVER_PATH } from './sessions/gateway-paths.js';
import { UpgradeRouter } from './http/upgrades.js';
import { Telemetry } from './features/telemetry/telemetry.js';
import { TelemetryArchive } from './features/telemetry/archive.js';
import { telemetryDestinationHandlers, telemetryHandlers } from './http/routes/telemetry.js';
import { TelemetryDestinations } from './features/telemetry/destinations.js';
import { BidiGateway } from './http/gateways/bidi.js';
import { LIVE_WS_PATH, LiveView } from './http/gateways/live-view.js';
import { buildServer } from './http/server.js';
import { McpEndpoint } from './http/mcp.js';
import { StorageQuotas, storageLimitsFromEnv } from './org/storage.js';
import { ConnectionGuard, frontDoorLimits, HostCheck } from './http/front-door.js';
import { OriginCheck, WebsocketLimits, websocketLimitsFromEnv } from './http/websocket-limits.js';
import { browserHandlers } from './http/routes/browsers.js';
import { computerHandlers } from './http/routes/computer.js';
import { processHandlers } from './http/routes/process.js';
import { playwrightHandlers } from './http/routes/playwright.js';
import { webmcpHandlers } from './http/routes/webmcp.js';
import { replHandlers } from './http/routes/repl.js';
import { logHandlers } from './http/routes/logs.js';
import { curlHandlers } from './http/routes/curl.js';
import { replayHandlers } from './http/routes/replays.js';
import { ReplayRecorder } from './features/replays/recorder.js';
import { fsHandlers } from './http/routes/fs.js';
import { poolHandlers } from './http/routes/pools.js';
import { systemHandlers } from './http/routes/system.js';
import { deploymentHandlers } from './http/routes/deployments.js';
import { extensionHandlers } from './http/routes/extensions.js';
import { invocationHandlers } from './http/routes/invocations.js';
import { profileHandlers } from './http/routes/profiles.js';
import { proxyHandlers } from './http/routes/proxies.js';
import { apiKeyHandlers } from './http/routes/api-keys.js';
import { ApiKeys } from './org/api-keys.js';
import { Deployments, imageOf } from './apps/deployments.js';
import { Extensions } from './features/extensions/extensions.js';
import { Invocations, markerOf, syncCapMsFromEnv } from './apps/invocations.js';
import { AppSpares } from './apps/app-spares.js';
import { Profiles } from './features/profiles/profiles.js';
import { parseStealthProxy, Proxies } from './features/proxies/proxies.js';
import { Stealth } from './features/stealth/stealth.js';
import { PoolManager } from './pools/manager.js';
import { reapLeftovers } from './sessions/reaper.js';
import { SessionManager } from './sessions/manager.js';
import { Standby } from './sessions/ready/standby.js';
import { appSpareBoxCount, appSpareIdleMs, burstBudgetMb, burstHoldMs, forgetAfterMs, spareBoxCount, type StandbySet } from '../src/standby.js';
import { SpareBoxes } from './sessions/ready/spare-boxes.js';
import { ChromePolicies } from './features/chrome-policy.js';
import { newId } from '../src/ids.js';
import { Store } from './lib/state/store.js';
import { admissionLimits, LaunchAdmission, sessionCapacity } from './sessions/admission.js';
import { Projects } from './org/projects.js';
import { Quotas } from './org/quotas.js';
import { projectHandlers } from './http/routes/projects.js';
import { credentialHandlers, credentialProviderHandlers } from './http/routes/credentials.js';
import { authConnectionHandlers } from './http/routes/auth-connections.js';
import { AuthConnections, minHealthCheckSeconds } from './managed-auth/auth-connections.js';
import { CredentialProviders } from './org/credentials/providers.js';
import { Credentials } from './org/credentials/credentials.js';
import { Vault } from './org/credentials/vault.js';
import { AuditLog, auditRetentionFromEnv } from './org/audit/audit-log.js';
import { auditLogHandlers } from './http/routes/audit-logs.js';
import { auditExportDestinationHandlers } from './http/routes/audit-export-destinations.js';
import { AuditExportDestinations, auditExportSettingsFromEnv } from './org/audit/export-destinations.js';
import { History, retentionFromEnv } from './lib/state/history.js';
import type { SessionRecord } from './sessions/record.js';
import type { InvocationRecord } from './apps/invocations.js';
import { WatchFeed } from './http/watch-feed.js';
import { watchHandlers } from './http/routes/watch.js';
import { SessionTokens } from './sessions/tokens.js';
import { Lifecycle } from './lib/lifecycle.js';
import { findMarkedProcesses, signal, waitGone, within } from './lib/procs.js';
import { LaunchDemand } from './lib/launch-demand.js';
import { InvocationBrowsers } from './apps/invocation-browsers.js';
import type { Handlers } from './http/handlers.js';

export interface DaemonOptions {
  home: string;
  host: string;
  port: number;
  chromiumPath: string;
  /** Headless sessions' browser when RBROWSE_HEADLESS_SHELL asks for Chromium's headless shell (src/system-deps.ts). */
  headlessShellPath?: string;
  /** The standby set (src/standby.ts); no entries and no learning: every create launches its own browser. */
  standby: StandbySet;
  log: (msg: string, extra?: object) => void;
}

export interface Daemon {
  server: FastifyInstance;
  sessions: SessionManager;
  pools: PoolManager;
  baseUrl: string;
  /** What an operator must hear of this start (state recovered from its last good copy). */
  notices: string[];
  listen(): Promise<string>;
  /** Ends every session (closing each browser gracefully), then the server. */
  close(): Promise<void>;
}

/** What an operator must know of this host's boxes: what they cannot have here. */
function boxNotices(support: BoxSupport): string[] {
  const out: string[] = [];
  if (!support.namespaces.ok) out.push(`sessions cannot start: ${support.namespaces.why}`);
  if (support.uids === 'shared')
    out.push('the daemon is not root: every session runs as its uid (in namespaces of its own), without per-session users or a size-capped disk');
  if (!support.network.pasta) out.push(`sessions have no network beyond the host's loopback: ${support.network.why}`);
  for (const [name, s] of Object.entries(support.limits)) if (!s.enforced) out.push(`the per-session ${name} limit is not enforced: ${s.why}`);
  return out;
}

function stateNotices(store: Store, file: string): string[] {
  const { source, unreadable } = store.opening;
  if (unreadable) {
    return [
      `${file} did not parse (${unreadable.error}): started from its last good copy (as current as the file was); the unreadable file is kept as ${unreadable.keptAs}`,
    ];
  }
  return source === 'last-good' ? [`${file} was missing: started from its last good copy`] : [];
}

/** Where clients reach the daemon: known for certain once it listens (a port of 0 picks one). */
class PublicAddress {
  url: string;
  constructor(
    private readonly host: string,
    port: number,
  ) {
    this.url = baseUrlFor(host, port);
  }
  listening(port: number): void {
    this.url = baseUrlFor(this.host, port);
  }
}

/**
 * The composition root: every long-lived part is built here, once, in order, and handed to the
 * parts built on it, so each can be constructed alone in a test. Each is added to the lifecycle as
 * it is built: started in that order once the daemon listens, closed in the reverse one.
 */
export async function createDaemon(opts: DaemonOptions): Promise<Daemon> {
  const life = new Lifecycle(opts.log);
  try {
    return await buildDaemon(opts, life);
  } catch (err) {
    // Whatever was built before the failure is closed, as a stop would.
    await life.close();
    throw err;
  }
}

async function buildDaemon(opts: DaemonOptions, life: Lifecycle): Promise<Daemon> {
  const { log } = opts;
  const paths = homePaths(opts.home);
  await mkdir(paths.sessionsDir, { recursive: true, mode: 0o700 });
  // Closed last: whatever the steps before changed is in both copies of the state file before the exit.
  const store = life.add('state file', await Store.open(paths.stateFile, log), { close: (s) => s.flushed() });
  await mkdir(paths.historyDir, { recursive: true, mode: 0o700 });
  const retention = retentionFromEnv();
  // Bounded for each owner apart: one organization's churn cannot push another's records out.
  const sessionHistory = life.add(
    'session history',
    await History.open<SessionRecord>(
      join(paths.historyDir, 'sessions.jsonl'),
      retention,
      (r) => Date.parse(r.deleted_at ?? r.created_at),
      (r) => r.org_id,
    ),
    { close: (h) => h.close() },
  );
  const invocationHistory = life.add(
    'invocation history',
    await History.open<InvocationRecord>(
      join(paths.historyDir, 'invocations.jsonl'),
      retention,
      (r) => Date.parse(r.finished_at ?? r.started_at),
      (r) => r.org_id,
    ),
    { close: (h) => h.close() },
  );
  const launcher = life.add('launcher', new ProcessLauncher({ home: opts.home, log }), { close: (l) => l.close() });
  const cdpRelay = life.add('CDP relay', new CdpRelay({ log }), { close: (r) => r.close() });
  // Started ahead, so no client's connect waits for it.
  cdpRelay.start();
  // Every session and app runs in a box of its own (namespaces, users, limits: daemon/box).
  const boxes = life.add('boxes', await Boxes.create({ home: opts.home, dir: join(opts.home, 'boxes'), host: launcher, log }), {
    close: (b) => b.close(),
  });
  // What each organization may keep on the disk, and the reserve the daemon keeps: every module that stores an organization's files admits its writes here.
  const storage = new StorageQuotas({ home: opts.home, store }, storageLimitsFromEnv());
  // Built before the reaper: a crashed daemon's sessions with save_changes are saved from the disks their boxes left.
  const profiles = new Profiles({ store, dir: paths.profilesDir, log, storage });
  await reapLeftovers({
    home: opts.home,
    sessionsDir: paths.sessionsDir,
    store,
    history: sessionHistory,
    log,
    boxes,
    salvage: (orphans) => profiles.recover({ orphans, boxes }),
    keepDisk: (id) => store.collection('deployments').some((d) => d.status === 'running' && imageOf(d.id) === id),
  });
  const auth = await Auth.open(store, paths);
  const tokens = await SessionTokens.open(paths.jwtSecretFile);

  // Chromium's own sandbox nests user namespaces inside the box's, which every host that runs boxes allows.
  const chromiumSandbox = process.env.RBROWSE_CHROMIUM_SANDBOX !== 'off';
  const address = new PublicAddress(opts.host, opts.port);
  const publicUrl = () => address.url;
  const extensions = new Extensions({ store, dir: paths.extensionsDir, log, storage });
  const proxies = new Proxies({
    store,
    credentialsDir: paths.credentialsDir,
    log,
    stealthProxy: parseStealthProxy(process.env.RBROWSE_STEALTH_PROXY),
    reach: { hostLoopback: boxes.support.hostLoopback },
  });
  const machineSize = new MachineSize({
    defaultBytes: boxes.memoryLimitOf('session'),
    setMemoryLimit: (id, bytes) => boxes.setMemoryLimit(id, bytes),
  });
  // Creates and actions that someone waits on: what is started ahead yields to them.
  const demand = new LaunchDemand();
  const deployments = life.add('deployments', new Deployments({ store, dir: paths.appsDir, boxes, log, storage }), { close: (d) => d.close() });
  await deployments.recover();
  // Spares start for running deployments, which drop theirs when they stop.
  const appSpares = life.add(
    'app spare boxes',
    new AppSpares({
      count: appSpareBoxCount(),
      idleMs: appSpareIdleMs(),
      start: async (deploymentId, invocationId) =>
        boxes.start({ kind: 'app', id: markerOf(invocationId), app: { image: await deployments.image(deploymentId) } }),
      running: (deploymentId) => deployments.isRunning(deploymentId),
      onStopped: (listener) => deployments.onStopped(listener),
      newId,
      busy: () => demand.busy,
      log,
    }),
    { close: (a) => a.close() },
  );
  const invocations = life.add(
    'invocations',
    new Invocations({
      store,
      home: opts.home,
      deployments,
      boxes,
      spares: appSpares,
      keys: auth,
      publicUrl,
      history: invocationHistory,
      log,
      syncCapMs: syncCapMsFromEnv(),
      demand,
    }),
    // Its actions use the session core's browsers and are stopped before any part closes.
    { stopping: (i) => i.close() },
  );
  await invocations.recover();
  const stealth = new Stealth({ chromiumPath: opts.chromiumPath, boxes, chromiumSandbox, log });
  const telemetryArchive = life.add('telemetry', new TelemetryArchive(paths.telemetryDir, log), { close: (a) => a.settled() });
  const telemetryDestinations = new TelemetryDestinations({ store, credentialsDir: paths.credentialsDir });
  const telemetry = new Telemetry(telemetryArchive, log, telemetryDestinations);
  const replays = life.add(
    'replays',
    new ReplayRecorder({
      dir: paths.replaysDir,
      publicUrl,
      tokens,
      maxMegabytes: Number(process.env.RBROWSE_REPLAY_MAX_MB) || 1024,
      log,
      storage,
    }),
    { close: (r) => r.close() },
  );
  // Replays stay after their sessions: those of the organization's sessions, live and ended, count.
  storage.register('replays', {
    paths: (owners) =>
      sessionHistory
        .allWith(store.data.sessions)
        .filter((r) => owners.has(r.org_id))
        .map((r) => join(paths.replaysDir, r.id)),
  });
  // A session's replays are kept as long as the history keeps the session.
  await replays.prune(retention.maxAgeMs);
  await telemetryArchive.prune(retention.maxAgeMs);
  // Creates waiting for a turn are refused as the stop begins, before the parts they wait on close.
  const admission = life.add('launch admission', new LaunchAdmission(admissionLimits()), { stopping: (a) => a.close() });
  const orgMaxSessions = sessionCapacity(admission.limits);
  log('browser launches admitted', { ...admission.limits, org_max_sessions: orgMaxSessions });
  const audit = life.add('audit log', await AuditLog.open(join(paths.historyDir, 'audit.jsonl'), auditRetentionFromEnv()), {
    close: (a) => a.close(),
  });
  const auditExports = life.add('audit export', new AuditExportDestinations({ store, audit, settings: auditExportSettingsFromEnv(), log }), {
    start: (e) => e.start(),
    close: (e) => e.stop(),
  });
  const vault = await Vault.open(join(paths.credentialsDir, 'vault-key'));
  const credentials = new Credentials({ store, vault });
  const credentialProviders = new CredentialProviders({ store, vault });
  const spareBoxes = life.add(
    'spare boxes',
    new SpareBoxes({ count: spareBoxCount(), start: (id) => boxes.start({ kind: 'session', id }), newId, busy: () => demand.busy, log }),
    { start: (s) => s.start(), close: (s) => s.close() },
  );
  const sessions = life.add(
    'sessions',
    new SessionManager({
      // The standby set launches through the session manager, which takes from it: the manager makes it.
      standby: (launcher) =>
        new Standby({ set: opts.standby, forgetMs: forgetAfterMs(), burst: { budgetMb: burstBudgetMb(), holdMs: burstHoldMs() }, log, ...launcher }),
      spareBoxes,
      admission,
      demand,
      store,
      history: sessionHistory,
      tokens,
      publicUrl,
      log,
      // Order matters: the profile's user data is in place before extensions and the rest launch.
      features: [profiles, extensions, proxies, stealth, invocations, replays, telemetry, machineSize, new ChromePolicies()],
      runtime: {
        home: opts.home,
        sessionsDir: paths.sessionsDir,
        chromiumPath: opts.chromiumPath,
        ...(opts.headlessShellPath ? { headlessShellPath: opts.headlessShellPath } : {}),
        displays: new DisplayAllocator(),
        boxes,
        chromiumSandbox,
        log,
      },
    }),
    // Its standby browsers and its sessions end together: each browser's graceful close is its own wait.
    { start: (s) => s.clock.start(), stopping: (s) => s.stopping(), close: (s) => Promise.all([s.standby?.close(), s.endAll('daemon_stop')]) },
  );
  const standby = life.add('standby', sessions.standby!, { start: (s) => s.start() });
  const invocationBrowsers = new InvocationBrowsers(invocations, sessions);
  const pools = life.add(
    'pools',
    new PoolManager({
      store,
      sessions,
      log,
      references: (org, config) => {
        const profileId = config.profile && profiles.resolvedId(org, config.profile);
        return { extension_ids: extensions.resolvedIds(org, config.extensions ?? []), ...(profileId ? { profile_id: profileId } : {}) };
      },
      resolveTelemetry: (org, request, current, mode) => telemetry.resolveFor(org, request, current, mode),
      onProfileSaved: (listener) => profiles.onSaved(listener),
    }),
    { start: (p) => p.start(), close: (p) => p.close() },
  );
  const minAuthHealthCheck = minHealthCheckSeconds();
  const authConnections = life.add(
    'managed auth',
    new AuthConnections({
      store,
      sessions,
      credentials,
      ensureProfile: (org, name) => profiles.ensure(org, name),
      record: async (org, sessionId) => (await sessions.withSession(org, sessionId, (s) => replays.start(s, {}))).replay_id,
      minHealthCheckSeconds: minAuthHealthCheck,
      log,
    }),
    { start: (a) => a.start(), close: (a) => a.close() },
  );
  const projects = new Projects({
    store,
    orgMaxSessions,
    managedAuth: { connectionsOf: (orgId) => authConnections.countOf(orgId), minHealthCheckSeconds: minAuthHealthCheck },
  });
  const quotas = new Quotas({
    projects,
    orgMaxSessions,
    usage: { sessions: (owner) => sessions.onDemandOf(owner) + pools.reservedBy(owner), invocations: (owner) => invocations.unfinishedOf(owner) },
  });
  const hosts = new HostCheck(opts.host);
  const limits = frontDoorLimits();
  const connections = new ConnectionGuard(limits);
  const websockets = new WebsocketLimits(websocketLimitsFromEnv(limits.maxConnections));
  const origins = new OriginCheck();
  const gateway = new CdpGateway({ sessions, telemetry, limits: websockets, origins, relay: cdpRelay, log });
  const watch = life.add('watch feed', new WatchFeed({ sessions, pools, invocations: (org) => invocations.unfinished(org) }), {
    close: (w) => w.close(),
  });
  const mcp = life.add(
    'MCP connections',
    new McpEndpoint(
      { sessions, log },
      {
        idleMs: (Number(process.env.RBROWSE_MCP_IDLE_SECONDS) || 600) * 1000,
        maxPerOrg: Number(process.env.RBROWSE_MCP_MAX_CONNECTIONS) || 64,
      },
    ),
    { close: (m) => m.stop() },
  );
  const handlers: Handlers = {
    ...systemHandlers({
      auth,
      gateway,
      publicUrl,
      standby,
      spareBoxes,
      appSpares,
      admission,
      sessionCount: () => sessions.running,
      helperPids: () => [launcher.pid, cdpRelay.pid],
      connections,
      websockets,
    }),
    ...browserHandlers(sessions, quotas, log),
    ...poolHandlers(pools, quotas),
    ...fsHandlers(sessions),
    ...processHandlers(sessions),
    ...playwrightHandlers(sessions),
    ...webmcpHandlers(sessions),
    ...replHandlers(sessions),
    ...logHandlers(sessions),
    ...curlHandlers(sessions),
    ...replayHandlers(sessions, replays),
    ...telemetryHandlers(sessions, telemetry),
    ...telemetryDestinationHandlers(telemetryDestinations),
    ...computerHandlers(new ComputerControl(sessions)),
    ...profileHandlers(profiles),
    ...apiKeyHandlers(new ApiKeys({ store, auth, projects })),
    ...projectHandlers(projects, Math.round(retention.maxAgeMs / (24 * 3600 * 1000))),
    ...credentialHandlers(credentials),
    ...credentialProviderHandlers(credentialProviders),
    ...authConnectionHandlers(authConnections),
    ...auditLogHandlers(audit),
    ...auditExportDestinationHandlers(auditExports),
    ...extensionHandlers(extensions),
    ...proxyHandlers(proxies),
    ...deploymentHandlers(deployments),
    ...invocationHandlers(invocations, invocationBrowsers, quotas),
    ...watchHandlers(watch),
  };
  // Closed first: no request comes in while the parts behind it close.
  const server = life.add(
    'http server',
    await buildServer({
      limits,
      connections,
      hosts,
      auth,
      scopeFor: (org, key, header) => projects.scopeFor(org, key, header),
      mcp: mcp.handle,
      jwtScope: async (jwt) => {
        const session = await sessions.sessionForToken(jwt, 'cdp');
        const scope = await projects.scopeOfOwner(session.record.org_id);
        if (!scope) throw new NotFoundError('browser session not found or ended');
        return { sessionId: session.id, scope };
      },
      log,
      answered: (r) => {
        telemetry.answered(r, (org, id) => sessions.liveIdOf(org, id));
        audit.record(r);
      },
      handlers,
    }),
    { close: (s) => s.close() },
  );
  const liveView = new LiveView({ sessions, tokens, telemetry, limits: websockets, origins });
  const bidi = new BidiGateway({ sessions, limits: websockets, origins, log });
  await liveView.register(server);
  new UpgradeRouter(log, hosts)
    .add(CDP_PATH, (req, socket, head, url) => gateway.upgrade(req, socket, head, url))
    .add(LIVE_WS_PATH, (req, socket, head, url) => liveView.upgrade(req, socket, head, url))
    .add(WEBDRIVER_PATH, (req, socket, head, url) => bidi.upgrade(req, socket, head, url))
    .attach(server.server);

  return {
    server,
    sessions,
    pools,
    notices: [...stateNotices(store, paths.stateFile), ...boxNotices(boxes.support)],
    get baseUrl() {
      return address.url;
    },
    async listen() {
      await server.listen({ host: opts.host, port: opts.port });
      const bound = server.server.address();
      const port = typeof bound === 'object' && bound ? bound.port : opts.port;
      address.listening(port);
      // Programs in boxes (the Playwright runner, the BiDi mapper, apps' SDK) reach the API on their own loopback.
      boxes.hostPorts.always([port]);
      await life.start();
      return address.url;
    },
    async close() {
      const closed = life.close();
      const graceMs = stopGraceMs();
      if (await within(graceMs, closed)) return;
      // Past the grace: every box's processes (sessions, standby, pools, actions, builds) are
      // killed, so the closes still waiting on them finish at once. Not the launcher: it closes
      // last, as on every stop. A killed box's disk stays mounted, and a group not yet empty
      // stays, until the next start's reaper drops them with a crashed daemon's leftovers.
      log('daemon stop: grace spent, ending every box', { grace_ms: graceMs });
      boxes.leaveLeftovers();
      const pids = (await findMarkedProcesses(opts.home)).filter((pid) => pid !== launcher.pid);
      for (const pid of pids) signal(pid, 'SIGKILL');
      await waitGone(pids);
      await closed;
    },
  };
}

/** How long `daemon stop` waits for graceful ends (Browser.close, builds, actions) before it kills what remains. */
function stopGraceMs(env: NodeJS.ProcessEnv = process.env): number {
  const seconds = Number(env.RBROWSE_STOP_GRACE_SECONDS);
  return (Number.isFinite(seconds) && seconds >= 0 && env.RBROWSE_STOP_GRACE_SECONDS !== '' ? seconds : 3) * 1000;
}
