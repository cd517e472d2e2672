import { httpHandler } from '../http/handler.js';
import { FundBudgetBody, FundParams } from '../http/schemas/admin.js';
import { fundBudget } from '../use-cases/admin.js';

export const handler = httpHandler(
  'fundBudget',
  { params: FundParams, body: FundBudgetBody },
  ({ caller, params, body, now }) => fundBudget(caller, params, body, now),
);
