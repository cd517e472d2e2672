import { httpHandler } from '../http/handler.js';
import { ReleaseBody, ReservationIdParams } from '../http/schemas/runtime.js';
import { releasedView } from '../http/views.js';
import { forceReleaseReservation, releaseReservation } from '../use-cases/settlements.js';

export const handler = httpHandler(
  'releaseReservation',
  { params: ReservationIdParams, body: ReleaseBody },
  async ({ caller, params, body, now, context }) =>
    releasedView(
      caller.kind === 'admin'
        ? await forceReleaseReservation(params.reservation_id, body, context)
        : await releaseReservation(caller, params.reservation_id, body, now),
    ),
);
