import { httpHandler } from '../http/handler.js';
import { healthView } from '../http/views.js';
import { health } from '../use-cases/health.js';

export const handler = httpHandler('runtimeHealth', {}, async () => healthView(await health()));
