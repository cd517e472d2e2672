import { originVerifyValue } from '../config/secrets.js';
import { secretsEqual } from '../domain/api-keys.js';
import { DomainError } from '../domain/errors.js';

/** The header CloudFront adds to every request it forwards to an API (infra/edge-stack.ts). */
export const ORIGIN_VERIFY_HEADER = 'x-origin-verify';

/**
 * Refuses a request that did not come through the edge (docs/decisions.md § Edge): when the
 * edge is on, the HTTP APIs' own endpoints stay reachable, so a caller could bypass the WAF.
 * The expected value is read once per container and compared in constant time (two SHA-256s);
 * a mismatch reads it again (at most every 10 s) before refusing, so a changed secret is taken
 * up without a redeploy and a flood of bypassing requests costs no more than one read per 10 s.
 */
export async function verifyOrigin(headers: Record<string, string | undefined>): Promise<void> {
  const expected = await originVerifyValue();
  if (expected === undefined || expected === '') return;
  const given = headers[ORIGIN_VERIFY_HEADER] ?? '';
  if (secretsEqual(given, expected)) return;
  const fresh = await originVerifyValue({ fresh: true });
  if (fresh !== undefined && fresh !== expected && secretsEqual(given, fresh)) return;
  throw new DomainError('FORBIDDEN', 'requests must come through the service’s edge (CloudFront)');
}
