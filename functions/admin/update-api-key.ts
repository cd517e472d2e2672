import { httpHandler } from '../http/handler.js';
import { KeyParams, UpdateApiKeyBody } from '../http/schemas/admin.js';
import { apiKeyView } from '../http/views.js';
import { updateApiKeyDetails } from '../use-cases/api-keys.js';

export const handler = httpHandler(
  'updateApiKey',
  { params: KeyParams, body: UpdateApiKeyBody },
  async ({ params, body, now, requestId }) =>
    apiKeyView(await updateApiKeyDetails(params.key_id, body, { now, requestId }), now),
);
