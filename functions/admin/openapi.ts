import document from '../http/openapi/admin.json' with { type: 'json' };
import { plainHandler } from '../http/serve.js';

export const handler = plainHandler('adminOpenApi', async () => document);
