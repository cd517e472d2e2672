import { httpHandler } from '../http/handler.js';
import { CreateReservationBody } from '../http/schemas/runtime.js';
import { reservationCreatedView } from '../http/views.js';
import { createReservation } from '../use-cases/reservations.js';

export const handler = httpHandler(
  'createReservation',
  { body: CreateReservationBody },
  async ({ caller, body, now, requestId, rate }) =>
    reservationCreatedView(await createReservation(caller, body, now, requestId, rate)),
);
