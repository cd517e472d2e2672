import { httpHandler } from '../http/handler.js';
import { WebhookSecurityConfigRequest } from '../http/schemas/webhooks.js';
import { securityView } from '../http/webhook-views.js';
import { replaceWebhookSecurity } from '../use-cases/webhooks.js';

export const handler = httpHandler(
  'updateWebhookSecurityConfig',
  { body: WebhookSecurityConfigRequest },
  async ({ body, now, requestId }) =>
    securityView(await replaceWebhookSecurity(body, { now, requestId })),
);
