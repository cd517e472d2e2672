import { bulkResultView } from '../http/governance-views.js';
import { httpHandler } from '../http/handler.js';
import { TenantBulkActionBody } from '../http/schemas/bulk.js';
import { bulkActionTenants } from '../use-cases/bulk-actions.js';

export const handler = httpHandler(
  'bulkActionTenants',
  { body: TenantBulkActionBody },
  async ({ body, context }) => bulkResultView(await bulkActionTenants(body, context)),
);
