import { httpHandler } from '../http/handler.js';
import { ListAuditLogsQuery } from '../http/schemas/admin.js';
import { auditPageView } from '../http/views.js';
import { listAuditLogs } from '../use-cases/audit.js';

export const handler = httpHandler(
  'listAuditLogs',
  { query: ListAuditLogsQuery },
  async ({ caller, query }) => auditPageView(await listAuditLogs(caller, query)),
);
