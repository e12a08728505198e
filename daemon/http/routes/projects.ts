import { sendPage } from '../../lib/paging.js';
import type { Projects } from '../../org/projects.js';
import type { HandlerGroup } from '../handlers.js';

export function projectHandlers(
  projects: Projects,
  replayRetentionDays: number,
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
  | 'getOrgEntitlements'
  | 'getAuthContext'
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
    getOrgEntitlements: ({ org }) => projects.entitlements(org, { replayRetentionDays }),
    getAuthContext: ({ org, key }) => ({
      authentication: { credential_id: key.id, method: 'api_key', source: 'api_key' },
      authorization: { credential_scope: { project_id: key.project_id ?? null }, effective_scope: { project_id: org.project_id } },
      organization: { id: org.org_id },
      principal: { id: key.id, type: 'api_key' },
    }),
  };
}
