import type { RouteDef } from './route-def.js';

// Deployments and apps (kernel-wire "Invocations, apps, deployments").
export const deploymentRoutes = {} as const satisfies Record<string, RouteDef>;
