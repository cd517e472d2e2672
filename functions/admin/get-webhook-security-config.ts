import { httpHandler } from '../http/handler.js';
import { securityView } from '../http/webhook-views.js';
import { readWebhookSecurity } from '../use-cases/webhooks.js';

export const handler = httpHandler('getWebhookSecurityConfig', {}, async () =>
  securityView(await readWebhookSecurity()),
);
