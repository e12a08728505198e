import { sendPage } from '../../paging.js';
import type { Projects } from '../../projects.js';
import type { HandlerGroup } from '../handlers.js';

export function projectHandlers(
  projects: Projects,
): HandlerGroup<
  | 'createProject'
  | 'listProjects'
  | 'getProject'
  | 'updateProject'
  | 'deleteProject'
  | 'getProjectLimits'
  | 'updateProjectLimits'
  | 'getOrgLimits'
  | 'updateOrgLimits'
> {
  return {
    createProject: ({ org, body }) => projects.create(org, body.name),
    listProjects: ({ org, query, reply }) => sendPage(reply, projects.list(org, query)),
    getProject: ({ org, params }) => projects.get(org, params.id),
    updateProject: ({ org, params, body }) => projects.update(org, params.id, body),
    deleteProject: ({ org, params }) => projects.delete(org, params.id),
    getProjectLimits: ({ org, params }) => projects.getLimits(org, params.id),
    updateProjectLimits: ({ org, params, body }) => projects.updateLimits(org, params.id, body),
    getOrgLimits: ({ org }) => projects.orgLimits(org),
    updateOrgLimits: ({ org, body }) => projects.updateOrgLimits(org, body),
  };
}
