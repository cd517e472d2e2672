import { httpHandler } from '../http/handler.js';
import document from '../http/openapi/admin.json' with { type: 'json' };

export const handler = httpHandler('adminOpenApi', {}, async () => document);
