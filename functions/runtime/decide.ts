import { httpHandler } from '../http/handler.js';
import { DecideBody } from '../http/schemas/runtime.js';
import { decide } from '../use-cases/decide.js';

export const handler = httpHandler('decide', { body: DecideBody }, ({ caller, body, now }) =>
  decide(caller, body, now),
);
