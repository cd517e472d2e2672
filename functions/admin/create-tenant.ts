import { httpHandler } from '../http/handler.js';
import { CreateTenantBody } from '../http/schemas/admin.js';
import { createTenant } from '../use-cases/admin.js';

export const handler = httpHandler('createTenant', { body: CreateTenantBody }, ({ body, now }) =>
  createTenant(body, now),
);
