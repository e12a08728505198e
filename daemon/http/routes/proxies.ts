import type { Proxies } from '../../proxies/proxies.js';
import type { HandlerGroup } from '../handlers.js';

export function proxyHandlers(_proxies: Proxies): HandlerGroup<never> {
  return {};
}
