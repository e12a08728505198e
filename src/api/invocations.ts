import type { RouteDef } from './route-def.js';

// Invocations of app actions (kernel-wire "Invocations, apps, deployments").
export const invocationRoutes = {} as const satisfies Record<string, RouteDef>;
