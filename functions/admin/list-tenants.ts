import { httpHandler } from '../http/handler.js';
import { ListTenantsQuery } from '../http/schemas/admin.js';
import { tenantPageView } from '../http/views.js';
import { listTenants } from '../use-cases/tenants.js';

export const handler = httpHandler('listTenants', { query: ListTenantsQuery }, async ({ query }) =>
  tenantPageView(await listTenants(query)),
);
