import { httpHandler } from '../http/handler.js';
import { CommitBody, ReservationIdParams } from '../http/schemas/runtime.js';
import { committedView } from '../http/views.js';
import { commitReservation } from '../use-cases/settlements.js';

export const handler = httpHandler(
  'commitReservation',
  { params: ReservationIdParams, body: CommitBody },
  async ({ caller, params, body, now, rate }) =>
    committedView(await commitReservation(caller, params.reservation_id, body, now, rate)),
);
