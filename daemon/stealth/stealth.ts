import type { SessionFeature } from '../sessions/features.js';

/** Removes the automation tells of stealth sessions. (Issue 5: to be built.) */
export class Stealth implements SessionFeature {}
