import { policyPageView } from '../http/governance-views.js';
import { httpHandler } from '../http/handler.js';
import { ListPoliciesQuery } from '../http/schemas/governance.js';
import { listPolicies } from '../use-cases/policies.js';

export const handler = httpHandler(
  'listPolicies',
  { query: ListPoliciesQuery },
  async ({ caller, query }) => policyPageView(await listPolicies(caller, query)),
);
