import type { Readable } from 'node:stream';
import type { Static, TSchema } from 'typebox';
import { daemonRoutes } from './daemon.js';
import { browserRoutes } from './browsers.js';
import { poolRoutes } from './pools.js';
import { fsRoutes } from './fs.js';
import { computerRoutes } from './computer.js';
import { logRoutes } from './logs.js';
import type { RouteDef } from './route-def.js';
import { deploymentRoutes } from './deployments.js';
import { extensionRoutes } from './extensions.js';
import { invocationRoutes } from './invocations.js';
import { profileRoutes } from './profiles.js';
import { apiKeyRoutes } from './api-keys.js';
import { projectRoutes } from './projects.js';
import { credentialProviderRoutes, credentialRoutes } from './credentials.js';
import { auditLogRoutes } from './audit-logs.js';
import { proxyRoutes } from './proxies.js';
import { watchRoutes } from './watch.js';
import { processRoutes } from './process.js';
import { playwrightRoutes } from './playwright.js';
import { webmcpRoutes } from './webmcp.js';
import { replRoutes } from './repl.js';
import { auditExportDestinationRoutes } from './audit-export-destinations.js';
import { curlRoutes } from './curl.js';
import { replayRoutes } from './replays.js';
import { telemetryRoutes } from './telemetry.js';
import { telemetryDestinationRoutes } from './telemetry-destinations.js';
import { authConnectionRoutes } from './auth-connections.js';

export type { RouteDef } from './route-def.js';

/** Every route of the daemon; see RouteDef. */
export const routes = {
  ...daemonRoutes,
  ...browserRoutes,
  ...poolRoutes,
  ...fsRoutes,
  ...computerRoutes,
  ...logRoutes,
  ...profileRoutes,
  ...apiKeyRoutes,
  ...projectRoutes,
  ...credentialRoutes,
  ...credentialProviderRoutes,
  ...auditLogRoutes,
  ...auditExportDestinationRoutes,
  ...extensionRoutes,
  ...proxyRoutes,
  ...deploymentRoutes,
  ...invocationRoutes,
  ...watchRoutes,
  ...processRoutes,
  ...playwrightRoutes,
  ...webmcpRoutes,
  ...replRoutes,
  ...curlRoutes,
  ...replayRoutes,
  ...telemetryRoutes,
  ...telemetryDestinationRoutes,
  ...authConnectionRoutes,
} as const satisfies Record<string, RouteDef>;

export type Routes = typeof routes;
export type OperationId = keyof Routes;

type StaticOf<T> = T extends TSchema ? Static<T> : undefined;
export type ParamsOf<K extends OperationId> = StaticOf<Routes[K] extends { params: infer P } ? P : undefined>;
export type QueryOf<K extends OperationId> = StaticOf<Routes[K] extends { querystring: infer Q } ? Q : undefined>;
/** Raw bytes in or out: a stream on the daemon's side, a Buffer (or text) on the client's. */
export type RawBody = Readable | Buffer | string;
export type BodyOf<K extends OperationId> = Routes[K] extends { consumes: string }
  ? RawBody
  : StaticOf<Routes[K] extends { body: infer B } ? B : undefined>;
type SuccessOf<K extends OperationId> = Routes[K] extends { produces: string }
  ? RawBody
  : Routes[K]['success']['body'] extends TSchema
    ? Static<Routes[K]['success']['body']>
    : // biome-ignore lint/suspicious/noConfusingVoidType: a route that answers no body has a handler that returns nothing
      void;
export type ResponseOf<K extends OperationId> = Routes[K] extends { noContentOnNull: true } ? SuccessOf<K> | null : SuccessOf<K>;
