import { httpHandler } from '../http/handler.js';
import { methodsAt } from '../routes.js';
import { notFound } from '../use-cases/not-found.js';

export const handler = httpHandler('runtimeNotFound', {}, async ({ event }) =>
  notFound(
    event.requestContext?.http?.method ?? '',
    event.rawPath ?? '',
    methodsAt('runtime', event.rawPath ?? ''),
  ),
);
