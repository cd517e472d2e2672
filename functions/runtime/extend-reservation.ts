import { httpHandler } from '../http/handler.js';
import { ExtendBody, ReservationIdParams } from '../http/schemas/runtime.js';
import { extendReservation } from '../use-cases/reservations.js';

export const handler = httpHandler(
  'extendReservation',
  { params: ReservationIdParams, body: ExtendBody },
  ({ caller, params, body, now }) => extendReservation(caller, params.reservation_id, body, now),
);
