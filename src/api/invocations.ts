import type { RouteDef } from './route-def.js';

// Apps, deployments and invocations (kernel-wire "Invocations, apps, deployments").
export const invocationRoutes = {} as const satisfies Record<string, RouteDef>;
