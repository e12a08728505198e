import { formatViewport, parseViewportArg, resolveViewport, SUPPORTED_VIEWPORTS_TEXT, type Viewport } from './viewport.js';

/** One kind of browser the daemon keeps launched ahead of demand, and how many of it. */
export interface StandbyEntry {
  headless: boolean;
  viewport: Viewport;
  count: number;
}

/** A standby set: the kinds kept ready, and how many more kinds it may learn from creates. */
export interface StandbySet {
  entries: StandbyEntry[];
  /**
   * Up to this many more kinds are kept ready, one browser each, once creates keep asking for
   * them (daemon/sessions/ready/standby.ts). 0: the set is exactly `entries`.
   */
  learn: number;
}

/** How long a learned kind stays without a create of it: RBROWSE_STANDBY_FORGET_SECONDS (default 5 min: idle memory goes back to the set's within minutes of the last create). */
export function forgetAfterMs(env: NodeJS.ProcessEnv = process.env): number {
  return wholeNumber(env, 'RBROWSE_STANDBY_FORGET_SECONDS', 5 * 60, 1, 'seconds') * 1000;
}

/**
 * How much memory browsers kept beyond the set's counts may take, for creates that come in a
 * burst (a test suite making a session per test): RBROWSE_STANDBY_BURST_MB, default 512 (0: off).
 */
export function burstBudgetMb(env: NodeJS.ProcessEnv = process.env): number {
  return wholeNumber(env, 'RBROWSE_STANDBY_BURST_MB', 512, 0, 'MiB');
}

/** How long browsers kept for a burst stay once its creates stop: RBROWSE_STANDBY_BURST_HOLD_SECONDS, default 60. */
export function burstHoldMs(env: NodeJS.ProcessEnv = process.env): number {
  return wholeNumber(env, 'RBROWSE_STANDBY_BURST_HOLD_SECONDS', 60, 1, 'seconds') * 1000;
}

/**
 * How many empty session boxes (namespaces, network, agent) are kept started for creates no
 * standby browser serves: RBROWSE_SPARE_BOXES, default 1 (0: off). Each holds ~50 MB.
 */
export function spareBoxCount(env: NodeJS.ProcessEnv = process.env): number {
  return wholeNumber(env, 'RBROWSE_SPARE_BOXES', 1, 0, 'boxes');
}

/**
 * How many app boxes (namespaces, network, agent, the deployment's code) are kept started for each
 * deployment invoked lately, so its next invocation starts only its action:
 * RBROWSE_APP_SPARE_BOXES, default 1 (0: off). Each holds ~45 MB.
 */
export function appSpareBoxCount(env: NodeJS.ProcessEnv = process.env): number {
  return wholeNumber(env, 'RBROWSE_APP_SPARE_BOXES', 1, 0, 'boxes');
}

/** How long a deployment keeps its spare boxes without an invocation: RBROWSE_APP_SPARE_IDLE_SECONDS, default 300. */
export function appSpareIdleMs(env: NodeJS.ProcessEnv = process.env): number {
  return wholeNumber(env, 'RBROWSE_APP_SPARE_IDLE_SECONDS', 300, 1, 'seconds') * 1000;
}

/** A whole number setting: `fallback` when unset or empty; anything else not a whole number of at least `min` is refused. */
function wholeNumber(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, unit: string): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min) {
    throw new Error(`${name} must be a whole number of ${unit}${min > 0 ? `, at least ${min}` : ''} (got "${raw}")`);
  }
  return Number(raw);
}

/**
 * What one ready browser of a kind is counted at against the burst budget: a headless Chromium
 * measured ~160 MB here; a headful one adds its display, window manager and VNC server.
 */
export const READY_BROWSER_MB = { headless: 160, headful: 230 } as const;

/**
 * The default session of each kind, one each (what `POST /browsers` with no body, or
 * `{headless: true}`, asks for), and up to two kinds learned from creates.
 */
export const DEFAULT_STANDBY = 'headless=1,headful=1,learn=2';
/** Learned kinds cost a browser each, ~160 MB and more: a few at most. */
const MAX_LEARN = 4;

/** The key a create and a standby browser share when they match. */
export const standbyKey = (headless: boolean, viewport: Viewport): string => `${headless ? 'headless' : 'headful'}@${formatViewport(viewport)}`;

/**
 * Parses RBROWSE_STANDBY / `daemon start --standby`: `0` (off), `N` (N of each default, and the
 * default learning), or a list of `headless|headful[@WxH[@R]][=N]` (N defaults to 1) and
 * `learn=K`, e.g. `headless=2,headful@1024x768,learn=1`. A list learns only when it says so.
 * Throws with a message naming the bad part.
 */
export function parseStandby(text: string | undefined): StandbySet {
  const spec = (text ?? DEFAULT_STANDBY).trim() || '0';
  if (/^\d+$/.test(spec)) {
    const n = Number(spec);
    return n === 0 ? { entries: [], learn: 0 } : parseStandby(`headless=${n},headful=${n},learn=2`);
  }
  const entries = new Map<string, StandbyEntry>();
  let learn = 0;
  for (const part of spec
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const l = /^learn=(\d+)$/.exec(part);
    if (l) {
      learn = Number(l[1]);
      if (learn > MAX_LEARN) throw new Error(`standby: learn at most ${MAX_LEARN} kinds (${part})`);
      continue;
    }
    const m = /^(headless|headful)(?:@([^=]+))?(?:=(\d+))?$/.exec(part);
    if (!m) throw new Error(`standby: "${part}" is not headless|headful[@WxH[@R]][=N] or learn=K`);
    const asked = m[2] === undefined ? undefined : parseViewportArg(m[2]);
    if (asked === null) throw new Error(`standby: "${m[2]}" is not WxH or WxH@R`);
    const viewport = resolveViewport(asked);
    if (!viewport) throw new Error(`standby: ${m[2]} is not a supported viewport (${SUPPORTED_VIEWPORTS_TEXT})`);
    const count = m[3] === undefined ? 1 : Number(m[3]);
    if (count > 20) throw new Error(`standby: at most 20 browsers of one kind (${part})`);
    const headless = m[1] === 'headless';
    const key = standbyKey(headless, viewport);
    entries.set(key, { headless, viewport, count: (entries.get(key)?.count ?? 0) + count });
  }
  return { entries: [...entries.values()].filter((e) => e.count > 0), learn };
}
