import { httpHandler } from '../http/handler.js';
import { CreateEventBody } from '../http/schemas/runtime.js';
import { createEvent } from '../use-cases/events.js';

export const handler = httpHandler(
  'createEvent',
  { body: CreateEventBody },
  ({ caller, body, now }) => createEvent(caller, body, now),
);
