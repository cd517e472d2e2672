import { httpHandler } from '../http/handler.js';
import { CreateTenantBody } from '../http/schemas/admin.js';
import { tenantView } from '../http/views.js';
import { createTenant } from '../use-cases/tenants.js';

export const handler = httpHandler(
  'createTenant',
  { body: CreateTenantBody },
  async ({ body, context }) => tenantView(await createTenant(body, context)),
);
