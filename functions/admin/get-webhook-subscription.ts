import { httpHandler } from '../http/handler.js';
import { SubscriptionParams } from '../http/schemas/webhooks.js';
import { subscriptionView } from '../http/webhook-views.js';
import { readSubscription } from '../use-cases/webhooks.js';

export const handler = httpHandler(
  'getWebhookSubscription',
  { params: SubscriptionParams },
  async ({ caller, params }) =>
    subscriptionView((await readSubscription(caller, params.subscription_id)).subscription),
);
