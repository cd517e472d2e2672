import { httpHandler } from '../http/handler.js';
import { KeyParams, RevokeApiKeyQuery } from '../http/schemas/admin.js';
import { apiKeyView } from '../http/views.js';
import { revokeApiKey } from '../use-cases/api-keys.js';

export const handler = httpHandler(
  'revokeApiKey',
  { params: KeyParams, query: RevokeApiKeyQuery },
  async ({ params, query, now, context }) =>
    apiKeyView(await revokeApiKey(params.key_id, query.reason, context), now),
);
