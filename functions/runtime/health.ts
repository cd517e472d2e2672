import { plainHandler } from '../http/serve.js';
import { healthView } from '../http/views.js';
import { health } from '../use-cases/health.js';

export const handler = plainHandler('runtimeHealth', async () => healthView(await health()));
