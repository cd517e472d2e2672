import { httpHandler } from '../http/handler.js';
import { health } from '../use-cases/health.js';

export const handler = httpHandler('runtimeHealth', {}, () => health());
