import { httpHandler } from '../http/handler.js';
import { ReleaseBody, ReservationIdParams } from '../http/schemas/runtime.js';
import { releasedView } from '../http/views.js';
import { releaseReservation } from '../use-cases/reservations.js';

export const handler = httpHandler(
  'releaseReservation',
  { params: ReservationIdParams, body: ReleaseBody },
  async ({ caller, params, body, now }) =>
    releasedView(await releaseReservation(caller, params.reservation_id, body, now)),
);
