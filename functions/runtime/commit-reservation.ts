import { httpHandler } from '../http/handler.js';
import { CommitBody, ReservationIdParams } from '../http/schemas/runtime.js';
import { commitReservation } from '../use-cases/reservations.js';

export const handler = httpHandler(
  'commitReservation',
  { params: ReservationIdParams, body: CommitBody },
  ({ caller, params, body, now }) => commitReservation(caller, params.reservation_id, body, now),
);
