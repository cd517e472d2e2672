import { httpHandler } from '../http/handler.js';
import { BudgetQuery, FundBudgetBody, fundRequest } from '../http/schemas/admin.js';
import { fundedView } from '../http/views.js';
import { fundBudget } from '../use-cases/budgets.js';

export const handler = httpHandler(
  'fundBudgetByQuery',
  { query: BudgetQuery, body: FundBudgetBody },
  async ({ caller, query, body, context }) =>
    fundedView(await fundBudget(caller, fundRequest(query, body), context)),
);
