import { connect } from 'node:net';
import type { Server } from '../../functions/routes.js';
import { documentProblem } from './openapi.js';

export interface Response<T = Record<string, unknown>> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: T;
}

export type Json = Record<string, unknown>;

/** The servers whose answers must hold to their OpenAPI document, by origin (stack.ts). */
const documented = new Map<string, Server>();
export function holdToDocuments(servers: Readonly<Record<Server, string>>): void {
  for (const [server, url] of Object.entries(servers)) {
    documented.set(new URL(url).origin, server as Server);
  }
}

/**
 * A small JSON client over real sockets. An answer of a test stack's server that its OpenAPI
 * document does not describe (status, or body) fails the test that asked.
 */
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
  const parsed: unknown = text ? JSON.parse(text) : {};
  const target = new URL(url);
  const server = documented.get(target.origin);
  const problem = server && documentProblem(server, method, target.pathname, res.status, parsed);
  if (problem) throw new Error(problem);
  return { status: res.status, headers: res.headers, body: parsed as T };
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

/** A request whose body is sent as given, answered as raw text: exact numbers stay visible. */
export async function rawRequest(
  method: string,
  url: string,
  headers: Record<string, string>,
  body?: string,
) {
  const res = await fetch(url, {
    method,
    headers: { ...headers, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: JSON.parse(text) as Json };
}

/** Raw bytes on a socket: for request lines and headers no HTTP client would send. */
export function rawHttp(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    let out = '';
    socket.on('data', (d: Buffer) => {
      out += d.toString();
    });
    socket.on('end', () => resolve(out));
    socket.on('close', () => resolve(out));
    socket.on('error', reject);
    socket.setTimeout(5_000, () => socket.destroy());
  });
}
export const portOf = (url: string) => Number(new URL(url).port);
