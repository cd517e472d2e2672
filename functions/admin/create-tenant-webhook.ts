import { httpHandler } from '../http/handler.js';
import { WebhookCreateRequest } from '../http/schemas/webhooks.js';
import { createdSubscriptionView } from '../http/webhook-views.js';
import { webhookPorts } from '../outbound/sinks.js';
import { createSubscription } from '../use-cases/webhooks.js';

export const handler = httpHandler(
  'createTenantWebhook',
  { body: WebhookCreateRequest },
  async ({ caller, body, now, requestId }) =>
    createdSubscriptionView(
      await createSubscription(caller, caller.tenant, body, { now, requestId }, webhookPorts()),
    ),
);
