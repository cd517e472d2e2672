import { policyView } from '../http/governance-views.js';
import { httpHandler } from '../http/handler.js';
import { CreatePolicyBody } from '../http/schemas/governance.js';
import { createPolicy } from '../use-cases/policies.js';

export const handler = httpHandler(
  'createPolicy',
  { body: CreatePolicyBody },
  async ({ caller, body, context }) => policyView(await createPolicy(caller, body, context)),
);
