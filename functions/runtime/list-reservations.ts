import { httpHandler } from '../http/handler.js';
import { ListReservationsQuery } from '../http/schemas/runtime.js';
import { listReservations } from '../use-cases/reads.js';

export const handler = httpHandler(
  'listReservations',
  { query: ListReservationsQuery },
  ({ caller, query }) => listReservations(caller, query),
);
