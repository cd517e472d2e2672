import document from '../http/openapi/runtime.json' with { type: 'json' };
import { plainHandler } from '../http/serve.js';

export const handler = plainHandler('runtimeOpenApi', async () => document);
