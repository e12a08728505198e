import type { Auth } from '../../org/auth.js';
import type { CdpGateway } from '../gateways/cdp.js';
import type { HandlerGroup } from '../handlers.js';
import type { Standby } from '../../sessions/ready/standby.js';
import type { SpareBoxes } from '../../sessions/ready/spare-boxes.js';
import type { AppSpares } from '../../apps/app-spares.js';
import type { LaunchAdmission } from '../../sessions/admission.js';
import { daemonResources } from '../../lib/diagnostics.js';
import type { ConnectionGuard } from '../front-door.js';
import type { WebsocketLimits } from '../websocket-limits.js';

/** What the daemon's own routes report on: its health, its resources, the local admin's keys. */
export interface SystemParts {
  auth: Auth;
  gateway: CdpGateway;
  publicUrl: () => string;
  standby: Pick<Standby, 'counts' | 'budget' | 'served'>;
  spareBoxes: Pick<SpareBoxes, 'stats'>;
  appSpares: Pick<AppSpares, 'stats'>;
  admission: Pick<LaunchAdmission, 'stats'>;
  sessionCount: () => number;
  /** The daemon's long-lived helper processes (the launcher, the CDP relay): not counted as children it must end. */
  helperPids: () => (number | undefined)[];
  connections: Pick<ConnectionGuard, 'stats'>;
  websockets: Pick<WebsocketLimits, 'stats'>;
}

export function systemHandlers(parts: SystemParts): HandlerGroup<'health' | 'cdpVersion' | 'adminCreateKey' | 'adminResources'> {
  return {
    health: () => ({
      status: 'ok' as const,
      standby: parts.standby.counts(),
      standby_burst: parts.standby.budget(),
      standby_served: parts.standby.served(),
      spare_boxes: parts.spareBoxes.stats(),
      app_spare_boxes: parts.appSpares.stats(),
      launches: parts.admission.stats(),
    }),
    cdpVersion: ({ query }) => parts.gateway.version(query.jwt, parts.publicUrl().replace(/^http/, 'ws')) as never,
    adminResources: async () => ({
      ...(await daemonResources(parts.sessionCount(), parts.helperPids())),
      connections: { ...parts.connections.stats(), ...parts.websockets.stats() },
    }),
    adminCreateKey: async ({ body }) => {
      const { org, key } = await parts.auth.createKey(body.org);
      return { org_id: org.id, org: org.name, key };
    },
  };
}
