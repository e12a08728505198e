import type { BrowserPool } from '../../src/api/pools.js';
import type { WatchInvocation, WatchSession } from '../../src/api/watch.js';
import { viewportText } from '../commands/browsers.js';
import { age, timeLeft } from '../output.js';

export const SESSION_HEADERS = ['SESSION', 'NAME', 'MODE', 'VIEWPORT', 'AGE', 'CDP', 'VIEWERS', 'TIMEOUT', 'POOL', 'INVOCATION'];

export function sessionRow(w: WatchSession, now: number): string[] {
  const s = w.session;
  return [
    s.session_id,
    s.name ?? '',
    s.headless ? 'headless' : 'headful',
    viewportText(s),
    age(s.created_at, now),
    String(w.cdp_clients),
    String(w.viewers),
    timeLeft(w, now),
    s.pool ? (s.pool.name ?? s.pool.id) : '',
    s.invocation_id ?? '',
  ];
}

export const POOL_HEADERS = ['POOL', 'NAME', 'SIZE', 'AVAILABLE', 'ACQUIRED', 'LAST ERROR'];

export function poolRow(p: BrowserPool): string[] {
  return [
    p.id,
    p.name ?? '',
    String(p.browser_pool_config.size),
    String(p.available_count),
    String(p.acquired_count),
    p.last_error ? `${p.last_error.code}: ${p.last_error.message}` : '',
  ];
}

export const INVOCATION_HEADERS = ['INVOCATION', 'APP', 'ACTION', 'STATUS', 'AGE'];

export function invocationRow(i: WatchInvocation, now: number): string[] {
  return [i.id, i.app_name ?? '', i.action_name ?? '', i.status, i.started_at ? age(i.started_at, now) : ''];
}

/** The key/value lines of the details pane. */
export function sessionDetails(w: WatchSession, now: number): [string, string][] {
  const s = w.session;
  const fields: [string, string | undefined][] = [
    ['session_id', s.session_id],
    ['name', s.name],
    ['mode', `${s.headless ? 'headless' : 'headful'}${s.kiosk_mode ? ', kiosk' : ''}${s.stealth ? ', stealth' : ''}`],
    ['viewport', viewportText(s)],
    ['cdp_ws_url', s.cdp_ws_url],
    ['live_view_url', s.browser_live_view_url],
    ['clients', `${w.cdp_clients} CDP, ${w.viewers} live view`],
    ['timeout', `${timeLeft(w, now)} left of ${s.timeout_seconds}s without a client`],
    ['pool', s.pool ? (s.pool.name ?? s.pool.id) : undefined],
    ['invocation_id', s.invocation_id],
    ['proxy_id', s.proxy_id],
    ['tags', s.tags && Object.keys(s.tags).length ? JSON.stringify(s.tags) : undefined],
    ['created_at', `${s.created_at} (${age(s.created_at, now)} ago)`],
  ];
  return fields.filter((f): f is [string, string] => Boolean(f[1]));
}

/**
 * Which rows of a list fit in `height` lines while keeping `selected` visible: the window
 * scrolls only as far as it must.
 */
export function visibleWindow(count: number, selected: number, height: number): { start: number; end: number } {
  if (count <= height) return { start: 0, end: count };
  const start = Math.min(Math.max(0, selected - Math.floor(height / 2)), count - height);
  return { start, end: start + height };
}
