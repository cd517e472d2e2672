import { httpHandler } from '../http/handler.js';
import { SubscriptionParams } from '../http/schemas/webhooks.js';
import { probeView } from '../http/webhook-views.js';
import { prober } from '../outbound/sinks.js';
import { testSubscription } from '../use-cases/deliveries.js';

export const handler = httpHandler(
  'testTenantWebhook',
  { params: SubscriptionParams },
  async ({ caller, params, requestId, trace }) =>
    probeView(
      await testSubscription(
        caller,
        params.subscription_id,
        { requestId, traceId: trace.traceId },
        prober(),
      ),
    ),
);
