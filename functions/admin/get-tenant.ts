import { httpHandler } from '../http/handler.js';
import { TenantParams } from '../http/schemas/admin.js';
import { tenantView } from '../http/views.js';
import { readTenant } from '../use-cases/tenants.js';

export const handler = httpHandler('getTenant', { params: TenantParams }, async ({ params }) =>
  tenantView(await readTenant(params.tenant_id)),
);
