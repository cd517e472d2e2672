import { httpHandler } from '../http/handler.js';
import { EventParams } from '../http/schemas/webhooks.js';
import { readEvent } from '../use-cases/event-log.js';

export const handler = httpHandler('getEvent', { params: EventParams }, async ({ params, now }) =>
  readEvent(params.event_id, now),
);
