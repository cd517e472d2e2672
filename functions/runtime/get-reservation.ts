import { httpHandler } from '../http/handler.js';
import { ReservationIdParams } from '../http/schemas/runtime.js';
import { getReservation } from '../use-cases/reads.js';

export const handler = httpHandler(
  'getReservation',
  { params: ReservationIdParams },
  ({ caller, params, now }) => getReservation(caller, params.reservation_id, now),
);
