import { refundedView } from '../http/extension-views.js';
import { httpHandler } from '../http/handler.js';
import { RefundBody } from '../http/schemas/extensions.js';
import { ReservationIdParams } from '../http/schemas/runtime.js';
import { refundReservation } from '../use-cases/refunds.js';

export const handler = httpHandler(
  'refundReservation',
  { params: ReservationIdParams, body: RefundBody },
  async ({ caller, params, body, now, requestId }) =>
    refundedView(await refundReservation(caller, params.reservation_id, body, { now, requestId })),
);
