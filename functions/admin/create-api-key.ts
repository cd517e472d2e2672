import { httpHandler } from '../http/handler.js';
import { CreateApiKeyBody } from '../http/schemas/admin.js';
import { createdApiKeyView } from '../http/views.js';
import { createApiKey } from '../use-cases/api-keys.js';

export const handler = httpHandler(
  'createApiKey',
  { body: CreateApiKeyBody },
  async ({ caller, body, context }) => createdApiKeyView(await createApiKey(caller, body, context)),
);
