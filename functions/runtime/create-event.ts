import { httpHandler } from '../http/handler.js';
import { CreateEventBody } from '../http/schemas/runtime.js';
import { eventView } from '../http/views.js';
import { createEvent } from '../use-cases/events.js';

export const handler = httpHandler(
  'createEvent',
  { body: CreateEventBody },
  async ({ caller, body, now, rate }) => eventView(await createEvent(caller, body, now, rate)),
);
