import { chargeListView } from '../http/extension-views.js';
import { httpHandler } from '../http/handler.js';
import { ListChargesQuery } from '../http/schemas/extensions.js';
import { ReservationIdParams } from '../http/schemas/runtime.js';
import { listCharges } from '../use-cases/charges.js';

export const handler = httpHandler(
  'listCharges',
  { params: ReservationIdParams, query: ListChargesQuery },
  async ({ caller, params, query }) =>
    chargeListView(await listCharges(caller, params.reservation_id, query)),
);
