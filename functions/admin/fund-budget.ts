import { httpHandler } from '../http/handler.js';
import { FundBudgetBody, FundParams, fundRequest } from '../http/schemas/admin.js';
import { fundedView } from '../http/views.js';
import { fundBudget } from '../use-cases/budgets.js';

export const handler = httpHandler(
  'fundBudget',
  { params: FundParams, body: FundBudgetBody },
  async ({ caller, params, body, now }) =>
    fundedView(await fundBudget(caller, fundRequest(params, body), now)),
);
