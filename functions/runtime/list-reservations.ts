import { httpHandler } from '../http/handler.js';
import { ListReservationsQuery } from '../http/schemas/runtime.js';
import { reservationPageView } from '../http/views.js';
import { listReservations } from '../use-cases/reads.js';

export const handler = httpHandler(
  'listReservations',
  { query: ListReservationsQuery },
  async ({ caller, query }) => reservationPageView(await listReservations(caller, query)),
);
