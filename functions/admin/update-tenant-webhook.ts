import { httpHandler } from '../http/handler.js';
import { SubscriptionParams, WebhookUpdateRequest } from '../http/schemas/webhooks.js';
import { subscriptionView } from '../http/webhook-views.js';
import { webhookPorts } from '../outbound/sinks.js';
import { changeSubscription } from '../use-cases/webhooks.js';

export const handler = httpHandler(
  'updateTenantWebhook',
  { params: SubscriptionParams, body: WebhookUpdateRequest },
  async ({ caller, params, body, now, requestId }) =>
    subscriptionView(
      await changeSubscription(
        caller,
        params.subscription_id,
        body,
        { now, requestId },
        webhookPorts(),
        {
          onTenantRoute: true,
        },
      ),
    ),
);
