import { DomainError } from '../domain/errors.js';
import type { Reply } from '../http/handler.js';
import type { StoredResponse } from '../store/idempotency.js';

/** SPEC § Idempotency rules 2-3: the original response, or 409 when the payload differs. */
export function replayOrMismatch(stored: StoredResponse | undefined, fingerprint: string): Reply {
  if (!stored) throw new Error('idempotency record without a stored response');
  if (stored.fingerprint !== fingerprint) {
    throw new DomainError(
      'IDEMPOTENCY_MISMATCH',
      'idempotency_key was already used with a different payload',
    );
  }
  return { statusCode: stored.statusCode, body: stored.body };
}

/** Bounded retries when a guarded write found the state changed since it was read. */
export const MAX_STALE_RETRIES = 8;
