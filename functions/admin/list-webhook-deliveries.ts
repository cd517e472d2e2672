import { httpHandler } from '../http/handler.js';
import { ListDeliveriesQuery, SubscriptionParams } from '../http/schemas/webhooks.js';
import { deliveryPageView } from '../http/webhook-views.js';
import { listDeliveries } from '../use-cases/deliveries.js';

export const handler = httpHandler(
  'listWebhookDeliveries',
  { params: SubscriptionParams, query: ListDeliveriesQuery },
  async ({ caller, params, query }) =>
    deliveryPageView(await listDeliveries(caller, params.subscription_id, query)),
);
