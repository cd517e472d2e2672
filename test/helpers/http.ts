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

/** Asserts SPEC's error body shape and returns it. */
export function errorOf(res: Response): {
  error: string;
  message: string;
  request_id: string;
  details?: Json;
} {
  return res.body as unknown as {
    error: string;
    message: string;
    request_id: string;
    details?: Json;
  };
}
