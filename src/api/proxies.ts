import type { RouteDef } from './route-def.js';

// Proxies: upstream proxies a session routes through via its local forwarding proxy.
export const proxyRoutes = {} as const satisfies Record<string, RouteDef>;
