import { httpHandler } from '../http/handler.js';
import { ListApiKeysQuery } from '../http/schemas/admin.js';
import { apiKeyPageView } from '../http/views.js';
import { listApiKeys } from '../use-cases/api-keys.js';

export const handler = httpHandler(
  'listApiKeys',
  { query: ListApiKeysQuery },
  async ({ query, now }) => apiKeyPageView(await listApiKeys(query, now), now),
);
