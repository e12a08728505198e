import type { Extensions } from '../../extensions/extensions.js';
import type { HandlerGroup } from '../handlers.js';

export function extensionHandlers(_extensions: Extensions): HandlerGroup<never> {
  return {};
}
