import type { Deployments } from '../../apps/deployments.js';
import { BadRequestError } from '../../../src/errors.js';
import { sendPage } from '../../lib/paging.js';
import type { HandlerGroup } from '../handlers.js';

type DeploymentOps = 'createDeployment' | 'listDeployments' | 'getDeployment' | 'deleteDeployment' | 'followDeployment' | 'listApps';

/** The zip of one app; what it unpacks to is bounded again by extractZip's limits. */
const MAX_ZIP_BYTES = 512 * 1024 ** 2;

export function deploymentHandlers(deployments: Deployments): HandlerGroup<DeploymentOps> {
  return {
    createDeployment: ({ org, request }) => {
      if (!request.isMultipart()) {
        throw new BadRequestError('a deployment is a multipart/form-data request: the zip in `file`, plus entrypoint_rel_path');
      }
      return deployments.create(org, request.parts({ limits: { fileSize: MAX_ZIP_BYTES, files: 1 } }));
    },
    listDeployments: ({ org, query, reply }) => sendPage(reply, deployments.list(org, query)),
    getDeployment: ({ org, params }) => deployments.get(org, params.id),
    deleteDeployment: ({ org, params }) => deployments.remove(org, params.id),
    followDeployment: ({ org, params, query, reply }) => deployments.follow(org, params.id, query.since).open(reply),
    listApps: ({ org, query, reply }) => sendPage(reply, deployments.listApps(org, query)),
  };
}
