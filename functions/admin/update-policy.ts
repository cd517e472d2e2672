import { policyView } from '../http/governance-views.js';
import { httpHandler } from '../http/handler.js';
import { PolicyParams, UpdatePolicyBody } from '../http/schemas/governance.js';
import { changePolicy } from '../use-cases/policies.js';

export const handler = httpHandler(
  'updatePolicy',
  { params: PolicyParams, body: UpdatePolicyBody },
  async ({ caller, params, body, context }) =>
    policyView(await changePolicy(caller, params.policy_id, body, context)),
);
