import { httpHandler } from '../http/handler.js';
import { ListBalancesQuery } from '../http/schemas/runtime.js';
import { listBalances } from '../use-cases/reads.js';

export const handler = httpHandler(
  'listBalances',
  { query: ListBalancesQuery },
  ({ caller, query }) => listBalances(caller, query),
);
