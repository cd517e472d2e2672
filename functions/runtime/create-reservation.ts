import { httpHandler } from '../http/handler.js';
import { CreateReservationBody } from '../http/schemas/runtime.js';
import { createReservation } from '../use-cases/reservations.js';

export const handler = httpHandler(
  'createReservation',
  { body: CreateReservationBody },
  ({ caller, body, now }) => createReservation(caller, body, now),
);
