import { httpHandler } from '../http/handler.js';
import document from '../http/openapi/runtime.json' with { type: 'json' };

export const handler = httpHandler('runtimeOpenApi', {}, async () => document);
