import { createHmac, timingSafeEqual } from 'node:crypto';
import { invalidRequest } from './errors.js';
import { canonicalJson } from './fingerprint.js';

/**
 * Opaque page cursors: the position plus a digest of the query they belong to, signed with
 * HMAC-SHA256. A tampered cursor, or one replayed against other filters or another tenant,
 * is refused with 400 rather than silently walking the wrong set.
 */
export function encodeCursor(secret: string, query: unknown, position: string): string {
  const body = Buffer.from(canonicalJson({ p: position })).toString('base64url');
  return `${body}.${sign(secret, query, body)}`;
}

export function decodeCursor(secret: string, query: unknown, cursor: string): string {
  const [body, mac] = cursor.split('.');
  if (!body || !mac || cursor.length > 2048) throw invalidCursor();
  const expected = Buffer.from(sign(secret, query, body));
  const given = Buffer.from(mac);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw invalidCursor();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor();
  }
  const position = (parsed as { p?: unknown } | null)?.p;
  if (typeof position !== 'string') throw invalidCursor();
  return position;
}

const sign = (secret: string, query: unknown, body: string): string =>
  createHmac('sha256', secret)
    .update(canonicalJson(query))
    .update('\n')
    .update(body)
    .digest('base64url');

/** A cursor that does not verify, or names no valid position: 400. */
export const invalidCursor = () =>
  invalidRequest('cursor is invalid, or belongs to another query', { field: 'cursor' });
