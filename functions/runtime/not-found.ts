import { httpHandler } from '../http/handler.js';
import { notFound } from '../use-cases/not-found.js';

export const handler = httpHandler('runtimeNotFound', {}, async ({ event }) =>
  notFound(event.requestContext?.http?.method ?? '', event.rawPath ?? ''),
);
