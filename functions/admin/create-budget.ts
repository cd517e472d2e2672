import { httpHandler } from '../http/handler.js';
import { CreateBudgetBody } from '../http/schemas/admin.js';
import { createBudget } from '../use-cases/admin.js';

export const handler = httpHandler(
  'createBudget',
  { body: CreateBudgetBody },
  ({ caller, body, now }) => createBudget(caller, body, now),
);
