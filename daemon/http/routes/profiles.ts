import type { Profiles } from '../../profiles/profiles.js';
import type { HandlerGroup } from '../handlers.js';

export function profileHandlers(_profiles: Profiles): HandlerGroup<never> {
  return {};
}
