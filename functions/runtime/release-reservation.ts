import { httpHandler } from '../http/handler.js';
import { ReleaseBody, ReservationIdParams } from '../http/schemas/runtime.js';
import { releaseReservation } from '../use-cases/reservations.js';

export const handler = httpHandler(
  'releaseReservation',
  { params: ReservationIdParams, body: ReleaseBody },
  ({ caller, params, body, now }) => releaseReservation(caller, params.reservation_id, body, now),
);
