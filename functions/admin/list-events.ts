import { httpHandler } from '../http/handler.js';
import { ListEventsQuery } from '../http/schemas/webhooks.js';
import { eventPageView } from '../http/webhook-views.js';
import { listEvents } from '../use-cases/event-log.js';

export const handler = httpHandler(
  'listEvents',
  { query: ListEventsQuery },
  async ({ caller, query, now }) => eventPageView(await listEvents(caller, query, now)),
);
