import { delegationListView } from '../http/extension-views.js';
import { httpHandler } from '../http/handler.js';
import { ListChargesQuery } from '../http/schemas/extensions.js';
import { ReservationIdParams } from '../http/schemas/runtime.js';
import { listDelegations } from '../use-cases/delegations.js';

export const handler = httpHandler(
  'listDelegations',
  { params: ReservationIdParams, query: ListChargesQuery },
  async ({ caller, params, query }) =>
    delegationListView(await listDelegations(caller, params.reservation_id, query)),
);
