import { httpHandler } from '../http/handler.js';
import { ValidateKeyBody } from '../http/schemas/admin.js';
import { validateKey } from '../use-cases/admin.js';

export const handler = httpHandler('validateKey', { body: ValidateKeyBody }, ({ body, now }) =>
  validateKey(body.key_secret, now),
);
