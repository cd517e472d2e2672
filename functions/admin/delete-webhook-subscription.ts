import { httpHandler } from '../http/handler.js';
import { SubscriptionParams } from '../http/schemas/webhooks.js';
import { removeSubscription } from '../use-cases/webhooks.js';

export const handler = httpHandler(
  'deleteWebhookSubscription',
  { params: SubscriptionParams },
  async ({ caller, params, now, requestId }) => {
    await removeSubscription(caller, params.subscription_id, { now, requestId });
    return undefined; // 204
  },
);
