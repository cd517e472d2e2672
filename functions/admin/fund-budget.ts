import { httpHandler } from '../http/handler.js';
import { FundBudgetBody, FundPath, fundRequest } from '../http/schemas/admin.js';
import { fundedView } from '../http/views.js';
import { fundBudget } from '../use-cases/budgets.js';

export const handler = httpHandler(
  'fundBudget',
  { params: FundPath, body: FundBudgetBody },
  async ({ caller, params, body, context }) =>
    fundedView(await fundBudget(caller, fundRequest(params, body), context)),
);
