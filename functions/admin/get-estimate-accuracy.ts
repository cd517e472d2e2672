import { accuracyView } from '../http/extension-views.js';
import { httpHandler } from '../http/handler.js';
import { BudgetQuery } from '../http/schemas/admin.js';
import { lookupAccuracy } from '../use-cases/estimate-accuracy.js';

export const handler = httpHandler(
  'getEstimateAccuracy',
  { query: BudgetQuery },
  async ({ caller, query }) => accuracyView(await lookupAccuracy(caller, query)),
);
