import { httpHandler } from '../http/handler.js';
import { KeyParams } from '../http/schemas/admin.js';
import { apiKeyView } from '../http/views.js';
import { readApiKey } from '../use-cases/api-keys.js';

export const handler = httpHandler('getApiKey', { params: KeyParams }, async ({ params, now }) =>
  apiKeyView(await readApiKey(params.key_id), now),
);
