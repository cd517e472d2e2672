import { httpHandler } from '../http/handler.js';
import { ListBudgetsQuery } from '../http/schemas/admin.js';
import { budgetPageView } from '../http/views.js';
import { listBudgets } from '../use-cases/budget-listing.js';

export const handler = httpHandler(
  'listBudgets',
  { query: ListBudgetsQuery },
  async ({ caller, query, now }) => budgetPageView(await listBudgets(caller, query, now)),
);
