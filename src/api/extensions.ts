import type { RouteDef } from './route-def.js';

// Extensions: unpacked Chromium extensions uploaded as zips, loaded with --load-extension.
export const extensionRoutes = {} as const satisfies Record<string, RouteDef>;
