export interface Viewport {
  width: number;
  height: number;
  refresh_rate: number;
}

/** The only width x height @ refresh_rate combinations the spec allows. */
export const SUPPORTED_VIEWPORTS: readonly Viewport[] = [
  { width: 2560, height: 1440, refresh_rate: 10 },
  { width: 1920, height: 1080, refresh_rate: 25 },
  { width: 1920, height: 1200, refresh_rate: 25 },
  { width: 1440, height: 900, refresh_rate: 25 },
  { width: 1024, height: 768, refresh_rate: 60 },
  { width: 1200, height: 800, refresh_rate: 60 },
];

export const DEFAULT_VIEWPORT: Viewport = { width: 1920, height: 1080, refresh_rate: 25 };

export const formatViewport = (v: Viewport): string => `${v.width}x${v.height}@${v.refresh_rate}`;

export const SUPPORTED_VIEWPORTS_TEXT = SUPPORTED_VIEWPORTS.map(formatViewport).join(', ');

/**
 * Applies the spec's rules: omitted means the default, a missing refresh rate is derived from the
 * one supported combination of that size, anything else is unsupported (null).
 */
export function resolveViewport(input?: { width: number; height: number; refresh_rate?: number }): Viewport | null {
  if (!input) return DEFAULT_VIEWPORT;
  const match = SUPPORTED_VIEWPORTS.find(
    (v) => v.width === input.width && v.height === input.height && (input.refresh_rate === undefined || v.refresh_rate === input.refresh_rate),
  );
  return match ? { ...match } : null;
}

/** Parses the CLI's `WxH` or `WxH@R`; returns null when the text is not of that form. */
export function parseViewportArg(text: string): { width: number; height: number; refresh_rate?: number } | null {
  const m = /^(\d+)x(\d+)(?:@(\d+))?$/.exec(text.trim());
  if (!m) return null;
  return { width: Number(m[1]), height: Number(m[2]), ...(m[3] ? { refresh_rate: Number(m[3]) } : {}) };
}
