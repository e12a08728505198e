import {
  TELEMETRY_CATEGORIES,
  type TelemetryCategory,
  type TelemetryConfig,
  type TelemetryEnvelope,
  type TelemetryRequest,
} from '../../../src/api/telemetry.js';
import { BadRequestError } from '../../../src/errors.js';

/** One event of a session's telemetry, as streamed and archived. */
export type TelemetryEvent = TelemetryEnvelope['event'];

/** The categories a session captures; null: telemetry is off. */
export type Categories = Record<TelemetryCategory, boolean>;

/** What `enabled: true` captures: the operational categories. CDP categories and screenshots are opt-in. */
const DEFAULTS: Categories = {
  control: true,
  connection: true,
  system: true,
  captcha: true,
  console: false,
  network: false,
  page: false,
  interaction: false,
  screenshot: false,
  platform: false,
};

/** The categories read through the session's CDP monitor. */
export const CDP_CATEGORIES: readonly TelemetryCategory[] = ['console', 'network', 'page', 'interaction'];

/**
 * A session's categories after a create (current undefined) or a PATCH, as Kernel resolves them:
 * on create, a request with `enabled: true` or categories layers them onto the defaults, and one
 * that is absent, empty or `enabled: false` captures nothing. On a PATCH, absent or empty leaves
 * the current set, `enabled: false` stops capture, `enabled: true` starts afresh from the defaults
 * plus the categories given, and categories alone merge onto the current set (the defaults when
 * none is active). A set with nothing enabled is off.
 */
export function resolveCategories(
  request: TelemetryRequest | null | undefined,
  current: Categories | null | undefined,
  mode: 'create' | 'update',
): Categories | null {
  const given = Object.entries(request?.browser ?? {}).filter(([, v]) => v?.enabled !== undefined) as [TelemetryCategory, { enabled: boolean }][];
  if (request?.enabled === false && given.length)
    throw BadRequestError.field('telemetry.enabled', 'false cannot be combined with browser category settings');
  if (!request || (request.enabled === undefined && given.length === 0)) return mode === 'create' ? null : (current ?? null);
  if (request.enabled === false) return null;
  const base = request.enabled === true || mode === 'create' ? DEFAULTS : (current ?? DEFAULTS);
  const next = { ...base, ...Object.fromEntries(given.map(([c, v]) => [c, v.enabled])) } as Categories;
  return TELEMETRY_CATEGORIES.some((c) => next[c]) ? next : null;
}

/**
 * The CDP methods whose commands give no `cdp_command` event: the list a request gives (`[]`
 * reports every method again), else the current one. Kernel merges it apart from `enabled`, so a
 * PATCH that only switches categories keeps it.
 */
export function resolveExcludedMethods(request: TelemetryRequest | null | undefined, current: readonly string[]): string[] {
  const given = request?.browser?.control?.cdp?.excluded_methods;
  return given ? [...new Set(given)] : [...current];
}

/** The API's view of a session's categories. */
export function configView(categories: Categories, excludedMethods: readonly string[] = []): TelemetryConfig {
  const browser = Object.fromEntries(TELEMETRY_CATEGORIES.map((c) => [c, { enabled: categories[c] }])) as TelemetryConfig['browser'];
  if (excludedMethods.length) browser.control = { ...browser.control, cdp: { excluded_methods: [...excludedMethods] } };
  return { browser };
}
