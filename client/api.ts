import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import { ApiError } from './errors.js';
import type { paths as AdminPaths } from './generated/admin.js';
import type { paths as RuntimePaths } from './generated/runtime.js';

export type { AdminPaths, RuntimePaths };
/** The admin server's operations, typed from functions/http/openapi/admin.json. */
export type AdminApi = Client<AdminPaths>;
/** The runtime server's operations, typed from functions/http/openapi/runtime.json. */
export type RuntimeApi = Client<RuntimePaths>;

/**
 * Who the requests are from: the operator's admin key (X-Admin-API-Key) or a tenant's API key
 * (X-Service-API-Key). One of them, never both: the server would have to pick.
 */
export type Credentials =
  | { readonly adminKey: string }
  | { readonly tenantKey: string }
  | Record<string, never>;

export interface ApiOptions {
  /** Where the server is, e.g. http://localhost:7979 ('' for the page's own origin). */
  readonly baseUrl: string;
  readonly auth?: Credentials;
  /** Anything else of RequestInit for every request, and a fetch to use instead of the global one. */
  readonly init?: Omit<ClientOptions, 'baseUrl' | 'headers'>;
}

export const ADMIN_KEY_HEADER = 'X-Admin-API-Key';
export const TENANT_KEY_HEADER = 'X-Service-API-Key';

function headersOf(credentials: Credentials = {}): Record<string, string> {
  if ('adminKey' in credentials) return { [ADMIN_KEY_HEADER]: credentials.adminKey };
  if ('tenantKey' in credentials) return { [TENANT_KEY_HEADER]: credentials.tenantKey };
  return {};
}

/** A typed client of the admin server (openapi-fetch): `unwrap(api.GET('/v1/admin/tenants'))`. */
export function adminApi(options: ApiOptions): AdminApi {
  return createClient<AdminPaths>({
    ...options.init,
    baseUrl: options.baseUrl,
    headers: headersOf(options.auth),
  });
}

/** A typed client of the runtime server (openapi-fetch). */
export function runtimeApi(options: ApiOptions): RuntimeApi {
  return createClient<RuntimePaths>({
    ...options.init,
    baseUrl: options.baseUrl,
    headers: headersOf(options.auth),
  });
}

/**
 * The body of a success, or the `ApiError` of anything else. openapi-fetch answers
 * `{ data, error, response }`; every caller here wants the data or a throw.
 */
export async function unwrap<T>(
  call: Promise<{ readonly data?: T; readonly error?: unknown; readonly response: Response }>,
): Promise<T> {
  const { data, error, response } = await call;
  // A 204 (a delete) has no body: there is nothing to answer but that it was done.
  if (response.status === 204) return undefined as T;
  if (!response.ok || data === undefined) throw ApiError.of(response, error);
  return data;
}

/**
 * A fresh idempotency key. One per intended change, kept across that change's retries: a retry
 * with the same key is answered from the first outcome, never applied twice.
 */
export const newIdempotencyKey = (prefix = 'client'): string => `${prefix}-${crypto.randomUUID()}`;

/** `body` with an idempotency key: its own when it has one, else a fresh one. */
export function withIdempotencyKey<B extends { readonly idempotency_key?: string | undefined }>(
  body: B,
  prefix?: string,
): B & { readonly idempotency_key: string } {
  return { ...body, idempotency_key: body.idempotency_key ?? newIdempotencyKey(prefix) };
}
