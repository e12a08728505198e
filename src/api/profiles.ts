import type { RouteDef } from './route-def.js';

// Profiles: saved user data a session loads and may write back (kernel-wire "Profiles").
export const profileRoutes = {} as const satisfies Record<string, RouteDef>;
