import type { BrowserPoolConfig, CreatePoolBody, UpdatePoolBody } from '../../src/api/pools.js';
import type { CreateBrowserBody } from '../../src/api/browsers.js';
import type { TelemetryConfig, TelemetryRequest } from '../../src/api/telemetry-config.js';
import type { OrgRecord } from '../lib/owned-records.js';

/** A telemetry request resolved as a session's would be (create: from nothing; update: onto the current), or undefined for none. */
export type ResolveTelemetry = (
  org: OrgRecord,
  request: TelemetryRequest | null | undefined,
  current: TelemetryConfig | undefined,
  mode: 'create' | 'update',
) => TelemetryConfig | undefined;

/** kernel-wire.md: fill rate in percent of size per minute, and an acquired browser's idle timeout. */
export const DEFAULT_FILL_RATE_PER_MINUTE = 10;
export const DEFAULT_POOL_TIMEOUT_SECONDS = 600;

/** The session fields of a pool's configuration, as POST /browsers takes them. */
export function sessionBody(c: BrowserPoolConfig): CreateBrowserBody {
  return {
    headless: c.headless,
    stealth: c.stealth,
    kiosk_mode: c.kiosk_mode,
    timeout_seconds: c.timeout_seconds,
    ...(c.viewport ? { viewport: c.viewport } : {}),
    // Pools load profiles read-only: save_changes is dropped, not refused (Kernel does the same).
    ...(c.profile ? { profile: { ...c.profile } } : {}),
    ...(c.extensions ? { extensions: c.extensions } : {}),
    ...(c.proxy_id ? { proxy_id: c.proxy_id } : {}),
    ...(c.start_url ? { start_url: c.start_url } : {}),
    ...(c.chrome_policy ? { chrome_policy: c.chrome_policy } : {}),
    ...(c.network ? { network: c.network } : {}),
    ...(c.region ? { region: c.region } : {}),
    ...(c.telemetry ? { telemetry: telemetryRequest(c.telemetry) } : {}),
  };
}

/** A pool's resolved telemetry as the create body of its browsers: exactly these categories, this export. */
export function telemetryRequest(t: TelemetryConfig): TelemetryRequest {
  const browser = Object.fromEntries(
    Object.entries(t.browser).map(([category, v]) => {
      const cdp = (v as { cdp?: { excluded_methods: string[] } }).cdp;
      return [category, { enabled: v.enabled, ...(cdp ? { cdp } : {}) }];
    }),
  ) as TelemetryRequest['browser'];
  const destination = t.export?.otlp.enabled ? t.export.otlp.destination : undefined;
  return { enabled: true, browser, ...(destination ? { export: { otlp: { destination: { id: destination } } } } : {}) };
}

const selector = (s: { id?: string; name?: string }) => ({
  ...(s.id ? { id: s.id } : {}),
  ...(s.name ? { name: s.name } : {}),
});

/** A create body with its defaults filled in; `telemetry`: its telemetry, resolved. */
export function configFromCreate(body: CreatePoolBody, telemetry?: TelemetryConfig): BrowserPoolConfig {
  return {
    size: body.size,
    fill_rate_per_minute: body.fill_rate_per_minute ?? DEFAULT_FILL_RATE_PER_MINUTE,
    timeout_seconds: body.timeout_seconds ?? DEFAULT_POOL_TIMEOUT_SECONDS,
    headless: body.headless ?? false,
    stealth: body.stealth ?? false,
    kiosk_mode: body.kiosk_mode ?? false,
    ...(body.name ? { name: body.name } : {}),
    ...(body.viewport ? { viewport: body.viewport } : {}),
    ...(body.profile ? { profile: selector(body.profile) } : {}),
    ...(body.extensions?.length ? { extensions: body.extensions.map(selector) } : {}),
    ...(body.proxy_id ? { proxy_id: body.proxy_id } : {}),
    ...(body.start_url ? { start_url: body.start_url } : {}),
    ...(body.chrome_policy && Object.keys(body.chrome_policy).length ? { chrome_policy: body.chrome_policy } : {}),
    ...(body.network ? { network: body.network } : {}),
    ...(body.region ? { region: body.region } : {}),
    // Kernel's default: a pool made with a profile refreshes on its saves.
    ...(body.profile ? { refresh_on_profile_update: body.refresh_on_profile_update ?? true } : {}),
    ...(telemetry ? { telemetry } : {}),
  };
}

/**
 * The configuration after a PATCH: omitted fields stay, "" clears proxy_id and start_url,
 * {"id": ""} the profile, [] the extensions, {} the Chrome policies, and an empty name changes nothing.
 */
export function configFromUpdate(
  old: BrowserPoolConfig,
  body: UpdatePoolBody,
  resolveTelemetry?: (request: TelemetryRequest | null, current: TelemetryConfig | undefined) => TelemetryConfig | undefined,
): BrowserPoolConfig {
  const next: BrowserPoolConfig = { ...old };
  for (const key of ['size', 'fill_rate_per_minute', 'timeout_seconds', 'headless', 'stealth', 'kiosk_mode', 'network'] as const) {
    if (body[key] !== undefined) (next as Record<typeof key, unknown>)[key] = body[key];
  }
  if (body.telemetry !== undefined && resolveTelemetry) {
    const telemetry = resolveTelemetry(body.telemetry, old.telemetry);
    if (telemetry) next.telemetry = telemetry;
    else delete next.telemetry;
  }
  if (body.name) next.name = body.name;
  if (body.viewport) next.viewport = body.viewport;
  if (body.profile) {
    if (body.profile.id === '') delete next.profile;
    else next.profile = selector(body.profile);
  }
  if (body.extensions) {
    if (body.extensions.length) next.extensions = body.extensions.map(selector);
    else delete next.extensions;
  }
  for (const key of ['proxy_id', 'start_url'] as const) {
    if (body[key] === '') delete next[key];
    else if (body[key] !== undefined) next[key] = body[key];
  }
  if (body.chrome_policy) {
    if (Object.keys(body.chrome_policy).length) next.chrome_policy = body.chrome_policy;
    else delete next.chrome_policy;
  }
  // The setting goes with a profile: given one, it takes the default unless set; without one, none.
  if (body.refresh_on_profile_update !== undefined) next.refresh_on_profile_update = body.refresh_on_profile_update;
  else if (next.profile && !old.profile) next.refresh_on_profile_update = true;
  if (!next.profile) delete next.refresh_on_profile_update;
  return next;
}

/** Time between launches: the pool gains fill_rate_per_minute percent of its size per minute (none at 0). */
export function launchIntervalMs(c: BrowserPoolConfig): number {
  return c.fill_rate_per_minute > 0 ? 60_000 / ((c.size * c.fill_rate_per_minute) / 100) : Number.POSITIVE_INFINITY;
}

/**
 * Kernel's default acquire wait: the time to fill the whole pool at its rate (size cancels out).
 * A pool at rate 0 never fills (Kernel's figure would be forever): its acquirers wait a minute
 * for a browser released back.
 */
export function defaultAcquireTimeoutMs(c: BrowserPoolConfig): number {
  return c.fill_rate_per_minute > 0 ? (60_000 * 100) / c.fill_rate_per_minute : 60_000;
}
