import { refundedView } from '../http/extension-views.js';
import { httpHandler } from '../http/handler.js';
import { EventIdParams, RefundBody } from '../http/schemas/extensions.js';
import { refundEvent } from '../use-cases/refunds.js';

export const handler = httpHandler(
  'refundEvent',
  { params: EventIdParams, body: RefundBody },
  async ({ caller, params, body, now, requestId }) =>
    refundedView(await refundEvent(caller, params.event_id, body, { now, requestId })),
);
