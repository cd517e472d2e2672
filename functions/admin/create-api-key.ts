import { httpHandler } from '../http/handler.js';
import { CreateApiKeyBody } from '../http/schemas/admin.js';
import { createApiKey } from '../use-cases/admin.js';

export const handler = httpHandler('createApiKey', { body: CreateApiKeyBody }, ({ body, now }) =>
  createApiKey(body, now),
);
