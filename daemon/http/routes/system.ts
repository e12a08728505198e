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

export function systemHandlers(
  auth: Auth,
  gateway: CdpGateway,
  publicUrl: () => string,
  standby: Pick<Standby, 'counts' | 'budget' | 'served'>,
  spareBoxes: Pick<SpareBoxes, 'stats'>,
  appSpares: Pick<AppSpares, 'stats'>,
  admission: Pick<LaunchAdmission, 'stats'>,
  sessionCount: () => number,
  /** The daemon's long-lived helper processes (the launcher, the CDP relay): not counted as children it must end. */
  helperPids: () => (number | undefined)[],
  connections: Pick<ConnectionGuard, 'stats'>,
  websockets: Pick<WebsocketLimits, 'stats'>,
): HandlerGroup<'health' | 'cdpVersion' | 'adminCreateKey' | 'adminResources'> {
  return {
    health: () => ({
      status: 'ok' as const,
      standby: standby.counts(),
      standby_burst: standby.budget(),
      standby_served: standby.served(),
      spare_boxes: spareBoxes.stats(),
      app_spare_boxes: appSpares.stats(),
      launches: admission.stats(),
    }),
    cdpVersion: ({ query }) => gateway.version(query.jwt, publicUrl().replace(/^http/, 'ws')) as never,
    adminResources: async () => ({
      ...(await daemonResources(sessionCount(), helperPids())),
      connections: { ...connections.stats(), ...websockets.stats() },
    }),
    adminCreateKey: async ({ body }) => {
      const { org, key } = await auth.createKey(body.org);
      return { org_id: org.id, org: org.name, key };
    },
  };
}
