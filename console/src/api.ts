/**
 * The console's only way to the service: the typed admin client (client/, generated from the
 * admin server's OpenAPI document) of the server it was loaded from, with the admin key in
 * X-Admin-API-Key. The two runtime routes it needs (listing reservations, force-release) are
 * mounted on the admin server too, so every request stays on this origin (connect-src 'self').
 * No cookies, no cache, no referrer.
 */
import { type AdminApi, ApiError, adminApi, newIdempotencyKey } from '../../client/index.js';
import { fetchOrNetworkError } from './errors.js';

export { ApiError, collect, items, oneOf, unwrap } from '../../client/index.js';
export { apiBase } from './urls.js';

export type Client = AdminApi;

export function createClient(
  base: string,
  adminKey: string,
  onUnauthorized: (message: string) => void,
): Client {
  const api = adminApi({
    baseUrl: base,
    auth: { adminKey },
    init: {
      credentials: 'omit',
      cache: 'no-store',
      referrerPolicy: 'no-referrer',
      // A request without an answer is told apart from a bug in the console (errors.ts).
      fetch: fetchOrNetworkError,
    },
  });
  api.use({
    async onResponse({ response }) {
      if (response.status !== 401) return;
      const body: unknown = await response
        .clone()
        .json()
        .catch(() => undefined);
      onUnauthorized(ApiError.of(response, body).message);
    },
  });
  return api;
}

/** A fresh idempotency key for one operator action (kept across retries of the same dialog). */
export const idempotencyKey = (what: string): string => newIdempotencyKey(`console-${what}`);
