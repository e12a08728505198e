import { formatViewport, parseViewportArg, resolveViewport, SUPPORTED_VIEWPORTS_TEXT, type Viewport } from './viewport.js';

/** One kind of browser the daemon keeps launched ahead of demand, and how many of it. */
export interface StandbyEntry {
  headless: boolean;
  viewport: Viewport;
  count: number;
}

/** The default session of each kind, one each: what `POST /browsers` with no body (or `{headless: true}`) asks for. */
export const DEFAULT_STANDBY = 'headless=1,headful=1';

/** The key a create and a standby browser share when they match. */
export const standbyKey = (headless: boolean, viewport: Viewport): string =>
  `${headless ? 'headless' : 'headful'}@${formatViewport(viewport)}`;

/**
 * Parses RBROWSE_STANDBY / `daemon start --standby`: `0` (off), `N` (N of each default), or a
 * list of `headless|headful[@WxH[@R]][=N]` (N defaults to 1), e.g. `headless=2,headful@1024x768`.
 * Throws with a message naming the bad part.
 */
export function parseStandby(text: string | undefined): StandbyEntry[] {
  const spec = (text ?? DEFAULT_STANDBY).trim() || '0';
  if (/^\d+$/.test(spec)) {
    const n = Number(spec);
    return n === 0 ? [] : parseStandby(`headless=${n},headful=${n}`);
  }
  const entries = new Map<string, StandbyEntry>();
  for (const part of spec.split(',').map((p) => p.trim()).filter(Boolean)) {
    const m = /^(headless|headful)(?:@([^=]+))?(?:=(\d+))?$/.exec(part);
    if (!m) throw new Error(`standby: "${part}" is not headless|headful[@WxH[@R]][=N]`);
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
  return [...entries.values()].filter((e) => e.count > 0);
}
