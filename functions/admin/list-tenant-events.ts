import { httpHandler } from '../http/handler.js';
import { ListTenantEventsQuery } from '../http/schemas/webhooks.js';
import { eventPageView } from '../http/webhook-views.js';
import { listEvents } from '../use-cases/event-log.js';

export const handler = httpHandler(
  'listTenantEvents',
  { query: ListTenantEventsQuery },
  async ({ caller, query, now }) => eventPageView(await listEvents(caller, query, now)),
);
