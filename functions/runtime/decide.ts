import { httpHandler } from '../http/handler.js';
import { DecideBody } from '../http/schemas/runtime.js';
import { decisionView } from '../http/views.js';
import { decide } from '../use-cases/decide.js';

export const handler = httpHandler(
  'decide',
  { body: DecideBody },
  async ({ caller, body, now, requestId }) =>
    decisionView(await decide(caller, body, now, requestId)),
);
