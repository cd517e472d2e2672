import { httpHandler } from '../http/handler.js';
import { ListWebhooksQuery } from '../http/schemas/webhooks.js';
import { subscriptionPageView } from '../http/webhook-views.js';
import { listSubscriptions } from '../use-cases/webhooks.js';

export const handler = httpHandler(
  'listWebhookSubscriptions',
  { query: ListWebhooksQuery },
  async ({ query }) => subscriptionPageView(await listSubscriptions(query)),
);
