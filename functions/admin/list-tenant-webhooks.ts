import { httpHandler } from '../http/handler.js';
import { ListTenantWebhooksQuery } from '../http/schemas/webhooks.js';
import { subscriptionPageView } from '../http/webhook-views.js';
import { listedTenant, listSubscriptions } from '../use-cases/webhooks.js';

export const handler = httpHandler(
  'listTenantWebhooks',
  { query: ListTenantWebhooksQuery },
  async ({ caller, query: { tenant, ...query } }) =>
    subscriptionPageView(
      await listSubscriptions({ ...query, tenantId: listedTenant(caller, tenant) }),
    ),
);
