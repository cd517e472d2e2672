import { bulkResultView } from '../http/governance-views.js';
import { httpHandler } from '../http/handler.js';
import { BudgetBulkActionBody } from '../http/schemas/bulk.js';
import { bulkActionBudgets } from '../use-cases/bulk-actions.js';

export const handler = httpHandler(
  'bulkActionBudgets',
  { body: BudgetBulkActionBody },
  async ({ caller, body, context }) =>
    bulkResultView(await bulkActionBudgets(caller, body, context)),
);
