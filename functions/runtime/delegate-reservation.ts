import { httpHandler } from '../http/handler.js';
import { DelegationBody } from '../http/schemas/extensions.js';
import { ReservationIdParams } from '../http/schemas/runtime.js';
import { reservationCreatedView } from '../http/views.js';
import { delegateReservation } from '../use-cases/delegations.js';

export const handler = httpHandler(
  'delegateReservation',
  { params: ReservationIdParams, body: DelegationBody },
  async ({ caller, params, body, now, requestId }) =>
    reservationCreatedView(
      await delegateReservation(caller, params.reservation_id, body, { now, requestId }),
    ),
);
