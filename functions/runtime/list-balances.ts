import { httpHandler } from '../http/handler.js';
import { ListBalancesQuery } from '../http/schemas/runtime.js';
import { balancePageView } from '../http/views.js';
import { listBalances } from '../use-cases/reads.js';

export const handler = httpHandler(
  'listBalances',
  { query: ListBalancesQuery },
  async ({ caller, query, now }) => balancePageView(await listBalances(caller, query, now)),
);
