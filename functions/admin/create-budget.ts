import { httpHandler } from '../http/handler.js';
import { CreateBudgetBody } from '../http/schemas/admin.js';
import { budgetView } from '../http/views.js';
import { createBudget } from '../use-cases/budgets.js';

export const handler = httpHandler(
  'createBudget',
  { body: CreateBudgetBody },
  async ({ caller, body, context }) => budgetView(await createBudget(caller, body, context)),
);
