import { httpHandler } from '../http/handler.js';
import { KeyParams, UpdateApiKeyBody } from '../http/schemas/admin.js';
import { apiKeyView } from '../http/views.js';
import { updateApiKeyDetails } from '../use-cases/api-keys.js';

export const handler = httpHandler(
  'updateApiKey',
  { params: KeyParams, body: UpdateApiKeyBody },
  async ({ caller, params, body, now, context }) =>
    apiKeyView(await updateApiKeyDetails(caller, params.key_id, body, context), now),
);
