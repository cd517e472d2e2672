import { config } from '../config/settings.js';
import { staticFilesHandler } from '../http/static-files.js';

/** GET /console and /console/{proxy+}: the operator console's page and its bundled files. */
export const handler = staticFilesHandler('console', [
  config.CONSOLE_DIR,
  // In Lambda: built beside the bundle (infra/api-stack.ts, the route's `assets`).
  new URL('./console/', import.meta.url),
  // Locally: where `npm start` and `npm run build` put it.
  new URL('../../console/dist/', import.meta.url),
]);
