import { httpHandler } from '../http/handler.js';
import { TenantParams, UpdateTenantBody } from '../http/schemas/admin.js';
import { tenantView } from '../http/views.js';
import { changeTenant } from '../use-cases/tenants.js';

export const handler = httpHandler(
  'updateTenant',
  { params: TenantParams, body: UpdateTenantBody },
  async ({ params, body, context }) =>
    tenantView(await changeTenant(params.tenant_id, body, context)),
);
