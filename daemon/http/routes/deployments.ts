import type { Deployments } from '../../apps/deployments.js';
import type { HandlerGroup } from '../handlers.js';

export function deploymentHandlers(_deployments: Deployments): HandlerGroup<never> {
  return {};
}
