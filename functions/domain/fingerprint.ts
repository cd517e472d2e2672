import { createHash } from 'node:crypto';

/** Key order and whitespace never matter: objects are serialized with sorted keys. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

export const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');

/** The payload fingerprint that idempotency compares (SPEC § Idempotency rules 2-3). */
export const fingerprint = (payload: unknown): string => sha256Hex(canonicalJson(payload));

/**
 * Ids derived from (tenant, operation, idempotency key): a replay addresses the very same item,
 * so the record written by the original request doubles as its idempotency record.
 */
export const derivedId = (prefix: string, ...parts: string[]): string =>
  `${prefix}_${sha256Hex(parts.join('\u0000')).slice(0, 32)}`;
