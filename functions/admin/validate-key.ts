import { httpHandler } from '../http/handler.js';
import { ValidateKeyBody } from '../http/schemas/admin.js';
import { keyValidationView } from '../http/views.js';
import { validateKey } from '../use-cases/api-keys.js';

export const handler = httpHandler(
  'validateKey',
  { body: ValidateKeyBody },
  async ({ body, now }) => keyValidationView(await validateKey(body.key_secret, now)),
);
