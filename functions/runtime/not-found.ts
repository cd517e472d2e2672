import { plainHandler } from '../http/serve.js';
import { methodsAt } from '../routes.js';
import { notFound } from '../use-cases/not-found.js';

export const handler = plainHandler('runtimeNotFound', async ({ event }) =>
  notFound(
    event.requestContext?.http?.method ?? '',
    event.rawPath ?? '',
    methodsAt('runtime', event.rawPath ?? ''),
  ),
);
