import { SYSTEM_TENANT } from '../domain/events.js';
import { httpHandler } from '../http/handler.js';
import { CreateWebhookQuery, WebhookCreateRequest } from '../http/schemas/webhooks.js';
import { createdSubscriptionView } from '../http/webhook-views.js';
import { webhookPorts } from '../outbound/sinks.js';
import { createSubscription } from '../use-cases/webhooks.js';

export const handler = httpHandler(
  'createWebhookSubscription',
  { query: CreateWebhookQuery, body: WebhookCreateRequest },
  async ({ caller, query, body, now, requestId }) =>
    createdSubscriptionView(
      await createSubscription(
        caller,
        query.tenant_id ?? SYSTEM_TENANT,
        body,
        { now, requestId },
        webhookPorts(),
      ),
    ),
);
