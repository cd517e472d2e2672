import type { Reply } from '../http/handler.js';
import { tableIsUp } from '../store/health.js';

/** GET /actuator/health: UP when the table answers. */
export async function health(): Promise<Reply> {
  return (await tableIsUp())
    ? { statusCode: 200, body: { status: 'UP' } }
    : { statusCode: 503, body: { status: 'DOWN' } };
}
