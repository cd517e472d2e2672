import { httpHandler } from '../http/handler.js';
import { ReplayEventsRequest, SubscriptionParams } from '../http/schemas/webhooks.js';
import { replayView } from '../http/webhook-views.js';
import { deliveryQueue } from '../outbound/sinks.js';
import { replayEvents } from '../use-cases/webhook-bulk.js';

export const handler = httpHandler(
  'replayEvents',
  { params: SubscriptionParams, body: ReplayEventsRequest },
  async ({ caller, params, body, now, requestId }) =>
    replayView(
      await replayEvents(caller, params.subscription_id, body, { now, requestId }, deliveryQueue()),
    ),
);
