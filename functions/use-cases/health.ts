import { tableIsUp } from '../store/health.js';

/** GET /actuator/health: UP when the table answers. */
export async function health(): Promise<'UP' | 'DOWN'> {
  return (await tableIsUp()) ? 'UP' : 'DOWN';
}
