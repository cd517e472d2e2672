import { policyView } from '../http/governance-views.js';
import { httpHandler } from '../http/handler.js';
import { PolicyParams } from '../http/schemas/governance.js';
import { readPolicy } from '../use-cases/policies.js';

export const handler = httpHandler(
  'getPolicy',
  { params: PolicyParams },
  async ({ caller, params }) => policyView(await readPolicy(caller, params.policy_id)),
);
