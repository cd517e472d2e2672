import { httpHandler } from '../http/handler.js';
import { ExtendBody, ReservationIdParams } from '../http/schemas/runtime.js';
import { extendedView } from '../http/views.js';
import { extendReservation } from '../use-cases/settlements.js';

export const handler = httpHandler(
  'extendReservation',
  { params: ReservationIdParams, body: ExtendBody },
  async ({ caller, params, body, now }) =>
    extendedView(await extendReservation(caller, params.reservation_id, body, now)),
);
