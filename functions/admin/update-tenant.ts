import { httpHandler } from '../http/handler.js';
import { TenantParams, UpdateTenantBody } from '../http/schemas/tenants.js';
import { tenantView } from '../http/views.js';
import { changeTenant } from '../use-cases/tenants.js';

export const handler = httpHandler(
  'updateTenant',
  { params: TenantParams, body: UpdateTenantBody },
  async ({ params, body, now, requestId }) =>
    tenantView(await changeTenant(params.tenant_id, body, { now, requestId })),
);
