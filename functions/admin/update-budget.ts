import { httpHandler } from '../http/handler.js';
import { BudgetQuery, UpdateBudgetBody } from '../http/schemas/admin.js';
import { budgetLedgerView } from '../http/views.js';
import { changeBudget } from '../use-cases/budget-settings.js';

export const handler = httpHandler(
  'updateBudget',
  { query: BudgetQuery, body: UpdateBudgetBody },
  async ({ caller, query, body, context }) =>
    budgetLedgerView(await changeBudget(caller, query, body, context)),
);
