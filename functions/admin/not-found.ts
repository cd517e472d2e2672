import { httpHandler } from '../http/handler.js';
import { notFound } from '../use-cases/not-found.js';

export const handler = httpHandler('adminNotFound', {}, async ({ event }) =>
  notFound(event.requestContext?.http?.method ?? '', event.rawPath ?? ''),
);
