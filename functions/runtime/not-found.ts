import { plainHandler } from '../http/serve.js';
import { notFound } from '../use-cases/not-found.js';

export const handler = plainHandler('runtimeNotFound', async ({ event }) =>
  notFound(event.requestContext?.http?.method ?? '', event.rawPath ?? ''),
);
