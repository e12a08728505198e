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

/**
 * The composition root: every long-lived part is built here, once, and handed to the parts that
 * need it, so each can be constructed alone in a test.
 */
export async function createDaemon(opts: DaemonOptions): Promise<Daemon> {
  const paths = homePaths(opts.home);
  await mkdir(paths.sessionsDir, { recursive: true, mode: 0o700 });
  const store = await Store.open(paths.stateFile, opts.log);
  await mkdir(paths.historyDir, { recursive: true, mode: 0o700 });
  const retention = retentionFromEnv();
  // Bounded for each owner apart: one organization's churn cannot push another's records out.
  const sessionHistory = await History.open<SessionRecord>(
    join(paths.historyDir, 'sessions.jsonl'),
    retention,
    (r) => Date.parse(r.deleted_at ?? r.created_at),
    (r) => r.org_id,
  );
  const invocationHistory = await History.open<InvocationRecord>(
    join(paths.historyDir, 'invocations.jsonl'),
    retention,
    (r) => Date.parse(r.finished_at ?? r.started_at),
    (r) => r.org_id,
  );
  const launcher = new ProcessLauncher({ home: opts.home, log: opts.log });
  const cdpRelay = new CdpRelay({ log: opts.log });
  // Every session and app runs in a box of its own (namespaces, users, limits: daemon/box).
  const boxes = await Boxes.create({ home: opts.home, dir: join(opts.home, 'boxes'), host: launcher, log: opts.log });
  // Built before the reaper: a crashed daemon's sessions with save_changes are saved from the disks their boxes left.
  // What each organization may keep on the disk, and the reserve the daemon keeps: every module that stores an organization's files admits its writes here.
  const storage = new StorageQuotas({ home: opts.home, store }, storageLimitsFromEnv());
  const profiles = new Profiles({ store, dir: paths.profilesDir, log: opts.log, storage });
  await reapLeftovers({
    home: opts.home,
    sessionsDir: paths.sessionsDir,
    store,
    history: sessionHistory,
    log: opts.log,
    boxes,
    salvage: (orphans) => profiles.recover({ orphans, boxes }),
    keepDisk: (id) => store.collection('deployments').some((d) => d.status === 'running' && imageOf(d.id) === id),
  });
  const auth = await Auth.open(store, paths);
  const tokens = await SessionTokens.open(paths.jwtSecretFile);

  // Chromium's own sandbox nests user namespaces inside the box's, which every host that runs boxes allows.
  const chromiumSandbox = process.env.RBROWSE_CHROMIUM_SANDBOX !== 'off';
  let baseUrl = baseUrlFor(opts.host, opts.port);
  const publicUrl = () => baseUrl;
  const extensions = new Extensions({ store, dir: paths.extensionsDir, log: opts.log, storage });
  const proxies = new Proxies({
    store,
    credentialsDir: paths.credentialsDir,
    log: opts.log,
    stealthProxy: parseStealthProxy(process.env.RBROWSE_STEALTH_PROXY),
    reach: { hostLoopback: boxes.support.hostLoopback },
  });
  const machineSize = new MachineSize({
    defaultBytes: boxes.memoryLimitOf('session'),
    setMemoryLimit: (id, bytes) => boxes.setMemoryLimit(id, bytes),
  });
  // Built around each other: spares start for running deployments, which drop theirs when they stop.
  const appSpares = new AppSpares({
    count: appSpareBoxCount(),
    idleMs: appSpareIdleMs(),
    start: async (deploymentId, invocationId) =>
      boxes.start({ kind: 'app', id: markerOf(invocationId), app: { image: await deployments.image(deploymentId) } }),
    running: (deploymentId) => deployments.isRunning(deploymentId),
    newId,
    busy: () => invocations.busy || sessions.busy,
    log: opts.log,
  });
  const deployments = new Deployments({ store, dir: paths.appsDir, boxes, log: opts.log, stopped: (id) => appSpares.forget(id), storage });
  await deployments.recover();
  const invocations = new Invocations({
    store,
    home: opts.home,
    deployments,
    boxes,
    spares: appSpares,
    keys: auth,
    publicUrl,
    history: invocationHistory,
    log: opts.log,
    syncCapMs: syncCapMsFromEnv(),
  });
  await invocations.recover();
  const stealth = new Stealth({ chromiumPath: opts.chromiumPath, boxes, chromiumSandbox, log: opts.log });
  const telemetryArchive = new TelemetryArchive(paths.telemetryDir, opts.log);
  const telemetry = new Telemetry(telemetryArchive, opts.log);
  const telemetryDestinations = new TelemetryDestinations({
    store,
    credentialsDir: paths.credentialsDir,
    usersOf: (id) => telemetry.exportingTo(id),
    endpointChanged: (id) => telemetry.endpointChanged(id),
  });
  telemetry.destinations = telemetryDestinations;
  const replays = new ReplayRecorder({
    dir: paths.replaysDir,
    publicUrl,
    tokens,
    maxMegabytes: Number(process.env.RBROWSE_REPLAY_MAX_MB) || 1024,
    log: opts.log,
    storage,
  });
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
  const admission = new LaunchAdmission(admissionLimits());
  const orgMaxSessions = sessionCapacity(admission.limits);
  opts.log('browser launches admitted', { ...admission.limits, org_max_sessions: orgMaxSessions });
  const minAuthHealthCheck = minHealthCheckSeconds();
  const projects = new Projects({
    store,
    orgMaxSessions,
    // authConnections is built further down, on the session manager; asked only once requests come.
    managedAuth: { connectionsOf: (orgId) => authConnections.countOf(orgId), minHealthCheckSeconds: minAuthHealthCheck },
  });
  const audit = await AuditLog.open(join(paths.historyDir, 'audit.jsonl'), auditRetentionFromEnv());
  const auditExports = new AuditExportDestinations({ store, audit, settings: auditExportSettingsFromEnv(), log: opts.log });
  const vault = await Vault.open(join(paths.credentialsDir, 'vault-key'));
  const credentials = new Credentials({ store, vault });
  const credentialProviders = new CredentialProviders({ store, vault });
  // The standby set launches through the session manager, which takes from it: built around each other.
  const standby = new Standby({
    set: opts.standby,
    forgetMs: forgetAfterMs(),
    burst: { budgetMb: burstBudgetMb(), holdMs: burstHoldMs() },
    launch: (kind, claim) => sessions.startReady(kind, claim),
    busy: () => sessions.busy,
    log: opts.log,
  });
  const spareBoxes = new SpareBoxes({
    count: spareBoxCount(),
    start: (id) => boxes.start({ kind: 'session', id }),
    newId,
    busy: () => sessions.busy,
    log: opts.log,
  });
  const sessions: SessionManager = new SessionManager({
    standby,
    spareBoxes,
    admission,
    store,
    history: sessionHistory,
    tokens,
    publicUrl,
    log: opts.log,
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
      log: opts.log,
    },
  });
  invocations.attachSessions(sessions);
  const pools = new PoolManager({
    store,
    sessions,
    log: opts.log,
    references: (org, config) => {
      const profileId = config.profile && profiles.resolvedId(org, config.profile);
      return { extension_ids: extensions.resolvedIds(org, config.extensions ?? []), ...(profileId ? { profile_id: profileId } : {}) };
    },
    resolveTelemetry: (org, request, current, mode) => telemetry.resolveFor(org, request, current, mode),
  });
  profiles.onSaved((orgId, profileId) => void pools.profileSaved(orgId, profileId));
  const authConnections = new AuthConnections({
    store,
    sessions,
    credentials,
    ensureProfile: (org, name) => profiles.ensure(org, name),
    record: async (org, sessionId) => (await sessions.withSession(org, sessionId, (s) => replays.start(s, {}))).replay_id,
    minHealthCheckSeconds: minAuthHealthCheck,
    log: opts.log,
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
  // Started ahead, so no client's connect waits for it.
  cdpRelay.start();
  const gateway = new CdpGateway({ sessions, telemetry, limits: websockets, origins, relay: cdpRelay, log: opts.log });
  const watch = new WatchFeed({ sessions, pools, invocations: (org) => invocations.unfinished(org) });
  const mcp = new McpEndpoint(
    { sessions, log: opts.log },
    {
      idleMs: (Number(process.env.RBROWSE_MCP_IDLE_SECONDS) || 600) * 1000,
      maxPerOrg: Number(process.env.RBROWSE_MCP_MAX_CONNECTIONS) || 64,
    },
  );
  const server = await buildServer({
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
    log: opts.log,
    answered: (r) => {
      telemetry.answered(r, (org, id) => sessions.liveIdOf(org, id));
      audit.record(r);
    },
    handlers: {
      ...systemHandlers(
        auth,
        gateway,
        publicUrl,
        standby,
        spareBoxes,
        appSpares,
        admission,
        () => sessions.running,
        () => [launcher.pid, cdpRelay.pid],
        connections,
        websockets,
      ),
      ...browserHandlers(sessions, quotas, opts.log),
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
      ...invocationHandlers(invocations, quotas),
      ...watchHandlers(watch),
    },
  });
  const liveView = new LiveView({ sessions, tokens, telemetry, limits: websockets, origins });
  const bidi = new BidiGateway({ sessions, limits: websockets, origins, log: opts.log });
  await liveView.register(server);
  new UpgradeRouter(opts.log, hosts)
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
      return baseUrl;
    },
    async listen() {
      await server.listen({ host: opts.host, port: opts.port });
      const address = server.server.address();
      const port = typeof address === 'object' && address ? address.port : opts.port;
      baseUrl = baseUrlFor(opts.host, port);
      // Programs in boxes (the Playwright runner, the BiDi mapper, apps' SDK) reach the API on their own loopback.
      boxes.hostPorts.always([port]);
      sessions.startInactivityChecks();
      pools.start();
      standby.start();
      spareBoxes.start();
      await authConnections.start();
      auditExports.start();
      return baseUrl;
    },
    async close() {
      // A step that holds the stop up says so in the log (the CLI gives up after 60 s).
      const step = async (name: string, done: () => Promise<unknown>) => {
        const started = Date.now();
        const slow = setInterval(() => opts.log('daemon stop is waiting', { step: name, waited_ms: Date.now() - started }), 10_000);
        slow.unref();
        try {
          await done();
        } finally {
          clearInterval(slow);
        }
      };
      watch.close();
      await step('MCP connections', () => mcp.stop());
      pools.close();
      await step('managed auth', () => authConnections.close());
      await step('invocations', () => invocations.close());
      await step('app spare boxes', () => appSpares.close());
      await step('deployments', () => deployments.close());
      admission.close();
      await step('standby and spare boxes', () => Promise.all([standby.close(), spareBoxes.close()]));
      await step('sessions', () => sessions.endAll('daemon_stop'));
      await step('replays', () => replays.close());
      await step('telemetry', () => telemetryArchive.settled());
      await step('http server', () => server.close());
      await step('audit export', () => auditExports.stop());
      await step('histories', () => Promise.all([sessionHistory.close(), invocationHistory.close(), audit.close()]));
      await step('boxes', () => boxes.close());
      launcher.close();
      cdpRelay.close();
      // Last: whatever the steps above changed is in both copies of the state file before the exit.
      await store.flushed();
    },
  };
}
