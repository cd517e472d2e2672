/**
 * The console's only way to the service: the admin API of the server it was loaded from, with
 * the admin key in X-Admin-API-Key. The two runtime routes it needs (listing reservations,
 * force-release) are mounted on the admin server too, so every request stays on this origin
 * (connect-src 'self'). No cookies, no cache, no referrer.
 */
import { type Query, urlOf } from './urls.js';

export type { Query } from './urls.js';
export { apiBase } from './urls.js';

/** SPEC's error body, as a thrown error. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId?: string,
    readonly details?: Readonly<Record<string, unknown>>,
  ) {
    super(message);
  }
}

export interface Client {
  get<T>(path: string, query?: Query): Promise<T>;
  send<T>(
    method: 'POST' | 'PATCH' | 'DELETE',
    path: string,
    body?: unknown,
    query?: Query,
  ): Promise<T>;
}

export function createClient(
  base: string,
  adminKey: string,
  onUnauthorized: (message: string) => void,
): Client {
  const call = async <T>(method: string, path: string, body?: unknown, query?: Query) => {
    const headers: Record<string, string> = { 'X-Admin-API-Key': adminKey };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const response = await fetch(urlOf(base, path, query), {
      method,
      headers,
      ...(body !== undefined && { body: JSON.stringify(body) }),
      credentials: 'omit',
      cache: 'no-store',
      referrerPolicy: 'no-referrer',
    });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      parsed = undefined;
    }
    if (response.ok && parsed !== undefined) return parsed as T;
    const error = errorOf(response.status, parsed);
    if (response.status === 401) onUnauthorized(error.message);
    throw error;
  };
  return {
    get: (path, query) => call('GET', path, undefined, query),
    send: (method, path, body, query) => call(method, path, body, query),
  };
}

function errorOf(status: number, body: unknown): ApiError {
  const b = (body ?? {}) as {
    error?: unknown;
    message?: unknown;
    request_id?: unknown;
    details?: unknown;
  };
  return new ApiError(
    status,
    typeof b.error === 'string' ? b.error : `HTTP_${status}`,
    typeof b.message === 'string' ? b.message : `the server answered ${status}`,
    typeof b.request_id === 'string' ? b.request_id : undefined,
    typeof b.details === 'object' && b.details !== null
      ? (b.details as Record<string, unknown>)
      : undefined,
  );
}

/** Every page of a listing, following next_cursor, up to `max` items. */
export async function allPages<T, P extends { has_more: boolean; next_cursor?: string }>(
  client: Client,
  path: string,
  query: Query,
  items: (page: P) => readonly T[],
  max = 10_000,
): Promise<{ readonly items: T[]; readonly truncated: boolean }> {
  const found: T[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await client.get<P>(path, { ...query, limit: 100, cursor });
    found.push(...items(page));
    if (!page.has_more || !page.next_cursor) return { items: found, truncated: false };
    if (found.length >= max) return { items: found.slice(0, max), truncated: true };
    cursor = page.next_cursor;
  }
}

/** A fresh idempotency key for one operator action (kept across retries of the same dialog). */
export const idempotencyKey = (what: string): string => `console-${what}-${crypto.randomUUID()}`;
