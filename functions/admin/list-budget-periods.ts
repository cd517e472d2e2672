import { httpHandler } from '../http/handler.js';
import { ClosedPeriodsQuery } from '../http/schemas/admin.js';
import { closedPeriodPageView } from '../http/views.js';
import { listClosedPeriods } from '../use-cases/budgets.js';

export const handler = httpHandler(
  'listBudgetPeriods',
  { query: ClosedPeriodsQuery },
  async ({ caller, query }) => closedPeriodPageView(await listClosedPeriods(caller, query)),
);
