import { httpHandler } from '../http/handler.js';
import { SubscriptionParams } from '../http/schemas/webhooks.js';
import { removeSubscription } from '../use-cases/webhooks.js';

export const handler = httpHandler(
  'deleteTenantWebhook',
  { params: SubscriptionParams },
  async ({ caller, params, now, requestId }) => {
    await removeSubscription(
      caller,
      params.subscription_id,
      { now, requestId },
      { onTenantRoute: true },
    );
    return undefined; // 204
  },
);
