import type { Invocations } from '../../invocations/invocations.js';
import type { HandlerGroup } from '../handlers.js';

export function invocationHandlers(_invocations: Invocations): HandlerGroup<never> {
  return {};
}
