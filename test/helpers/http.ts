export interface Response<T = Record<string, unknown>> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: T;
}

export type Json = Record<string, unknown>;

/** A small JSON client over real sockets. */
export async function request<T = Json>(
  method: string,
  url: string,
  options: { body?: unknown; headers?: Record<string, string>; raw?: string } = {},
): Promise<Response<T>> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | undefined = options.raw;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(url, { method, headers, body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : {}) as T };
}

/** SPEC's error body, as the wire carries it. */
export interface WireError {
  error: string;
  message: string;
  request_id: string;
  details?: Json;
}

/** The body typed as an error, asserting nothing: `expectError` (errors.ts) checks it. */
export const errorOf = (res: Response): WireError => res.body as unknown as WireError;
