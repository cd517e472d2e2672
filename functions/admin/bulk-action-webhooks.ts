import { httpHandler } from '../http/handler.js';
import { WebhookBulkActionRequest } from '../http/schemas/webhooks.js';
import { bulkView } from '../http/webhook-views.js';
import { webhookPorts } from '../outbound/sinks.js';
import { bulkActionWebhooks } from '../use-cases/webhook-bulk.js';

export const handler = httpHandler(
  'bulkActionWebhooks',
  { body: WebhookBulkActionRequest },
  async ({ body, now, requestId }) =>
    bulkView(await bulkActionWebhooks(body, { now, requestId }, webhookPorts())),
);
