import { httpHandler } from '../http/handler.js';
import { BudgetQuery } from '../http/schemas/admin.js';
import { budgetLedgerView } from '../http/views.js';
import { setBudgetFrozen } from '../use-cases/budget-settings.js';

export const handler = httpHandler(
  'freezeBudget',
  { query: BudgetQuery },
  async ({ caller, query, context }) =>
    budgetLedgerView(await setBudgetFrozen(caller, query, true, context)),
);
