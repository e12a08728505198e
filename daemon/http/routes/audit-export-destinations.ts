import { sendPage } from '../../lib/paging.js';
import type { AuditExportDestinations } from '../../org/audit/export-destinations.js';
import type { HandlerGroup } from '../handlers.js';

export function auditExportDestinationHandlers(
  destinations: AuditExportDestinations,
): HandlerGroup<
  | 'createAuditLogExportDestination'
  | 'listAuditLogExportDestinations'
  | 'getAuditLogExportDestination'
  | 'updateAuditLogExportDestination'
  | 'deleteAuditLogExportDestination'
  | 'testAuditLogExportDestination'
> {
  return {
    createAuditLogExportDestination: ({ org, body }) => destinations.create(org, body),
    listAuditLogExportDestinations: async ({ org, query, reply }) => sendPage(reply, destinations.list(org, query)),
    getAuditLogExportDestination: async ({ org, params }) => destinations.get(org, params.id),
    updateAuditLogExportDestination: ({ org, params, body }) => destinations.update(org, params.id, body),
    deleteAuditLogExportDestination: ({ org, params }) => destinations.delete(org, params.id),
    testAuditLogExportDestination: ({ org, params }) => destinations.test(org, params.id),
  };
}
