import { httpHandler } from '../http/handler.js';
import { BudgetQuery } from '../http/schemas/admin.js';
import { budgetLedgerView } from '../http/views.js';
import { lookupBudget } from '../use-cases/budgets.js';

export const handler = httpHandler(
  'lookupBudget',
  { query: BudgetQuery },
  async ({ caller, query, now }) => budgetLedgerView(await lookupBudget(caller, query, now)),
);
