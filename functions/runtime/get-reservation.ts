import { httpHandler } from '../http/handler.js';
import { ReservationIdParams } from '../http/schemas/runtime.js';
import { expiredReservationDetails, reservationDetailView } from '../http/views.js';
import { getReservation } from '../use-cases/reads.js';

export const handler = httpHandler(
  'getReservation',
  { params: ReservationIdParams },
  async ({ caller, params, now }) =>
    reservationDetailView(await getReservation(caller, params.reservation_id, now)),
  { errorDetails: expiredReservationDetails },
);
