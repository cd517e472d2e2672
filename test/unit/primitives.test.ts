import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  generateKeySecret,
  hashKeySecret,
  isExpired,
  keyPrefixOf,
  secretsEqual,
} from '../../functions/domain/api-keys.js';
import { decodeCursor, encodeCursor } from '../../functions/domain/cursor.js';
import { DomainError, RetryLaterError } from '../../functions/domain/errors.js';
import { canonicalJson, derivedId, fingerprint } from '../../functions/domain/fingerprint.js';
import { errorResponse } from '../../functions/http/errors.js';

describe('fingerprint', () => {
  it('ignores key order and whitespace', () => {
    const a = JSON.parse('{"b": 1, "a": {"y": [1, 2], "x": "s"}}');
    const b = JSON.parse('{"a":{"x":"s","y":[1,2]},"b":1}');

    expect(fingerprint(a)).toBe(fingerprint(b));
    expect(canonicalJson(a)).toBe('{"a":{"x":"s","y":[1,2]},"b":1}');
  });

  it('tells different payloads apart, including array order and types', () => {
    expect(fingerprint({ a: [1, 2] })).not.toBe(fingerprint({ a: [2, 1] }));
    expect(fingerprint({ a: 1 })).not.toBe(fingerprint({ a: '1' }));
  });

  it('derives stable ids that differ per tenant and key', () => {
    expect(derivedId('rsv', 't1', 'k')).toBe(derivedId('rsv', 't1', 'k'));
    expect(derivedId('rsv', 't1', 'k')).not.toBe(derivedId('rsv', 't2', 'k'));
    expect(derivedId('rsv', 't1', 'k')).toMatch(/^rsv_[0-9a-f]{32}$/);
    // The separator keeps ('ab','c') and ('a','bc') apart.
    expect(derivedId('rsv', 'ab', 'c')).not.toBe(derivedId('rsv', 'a', 'bc'));
  });
});

describe('API key secrets', () => {
  it('carry 192 random bits behind a recognizable prefix', () => {
    const secret = generateKeySecret();

    expect(secret).toMatch(/^cyc_live_[A-Za-z0-9_-]{32}$/);
    expect(keyPrefixOf(secret)).toBe(secret.slice(0, 14));
    expect(generateKeySecret()).not.toBe(secret);
  });

  it('are stored as their SHA-256 only', () => {
    const expected = createHash('sha256').update('cyc_live_abc').digest('hex');

    expect(hashKeySecret('cyc_live_abc')).toBe(expected);
    expect(hashKeySecret('cyc_live_abc')).toMatch(/^[0-9a-f]{64}$/);
    expect(hashKeySecret('cyc_live_abc')).not.toBe(hashKeySecret('cyc_live_abd'));
  });

  it('compare equal only when identical', () => {
    expect(secretsEqual('same', 'same')).toBe(true);
    expect(secretsEqual('same', 'samf')).toBe(false);
    expect(secretsEqual('short', 'a much longer value')).toBe(false);
  });

  it('expire at expires_at, not before', () => {
    const key = { expiresAt: '2030-01-01T00:00:00.000Z' };

    expect(isExpired(key, Date.parse(key.expiresAt) - 1)).toBe(false);
    expect(isExpired(key, Date.parse(key.expiresAt))).toBe(true);
    expect(isExpired({}, Date.now())).toBe(false);
  });
});

describe('cursors', () => {
  const query = { tenant: 't', workspace: 'w' };

  it('round-trip a position for the same query', () => {
    const cursor = encodeCursor('secret', query, 'pos-1');

    expect(decodeCursor('secret', query, cursor)).toBe('pos-1');
  });

  it('refuse tampering, another query, another secret, and garbage', () => {
    const cursor = encodeCursor('secret', query, 'pos-1');
    const [body, mac] = cursor.split('.');
    const forged = `${Buffer.from('{"p":"pos-9"}').toString('base64url')}.${mac}`;

    for (const attempt of [
      () => decodeCursor('secret', query, forged),
      () => decodeCursor('secret', { ...query, workspace: 'x' }, cursor),
      () => decodeCursor('other', query, cursor),
      () => decodeCursor('secret', query, 'garbage'),
      () => decodeCursor('secret', query, `${body}.`),
    ]) {
      expect(attempt).toThrow(DomainError);
    }
  });
});

describe('errorResponse', () => {
  it('hides the message of an unexpected error behind 500 INTERNAL_ERROR', () => {
    const error = new Error('table budget-ledger-prod not found at line 12');

    const response = errorResponse(error, 'req-1');

    expect(response.statusCode).toBe(500);
    expect(JSON.parse(String(response.body))).toEqual({
      error: 'INTERNAL_ERROR',
      message: 'unexpected server error',
      request_id: 'req-1',
    });
  });

  it.each([
    ['INVALID_REQUEST', 400],
    ['UNIT_MISMATCH', 400],
    ['UNAUTHORIZED', 401],
    ['FORBIDDEN', 403],
    ['NOT_FOUND', 404],
    ['BUDGET_EXCEEDED', 409],
    ['OVERDRAFT_LIMIT_EXCEEDED', 409],
    ['DEBT_OUTSTANDING', 409],
    ['RESERVATION_FINALIZED', 409],
    ['IDEMPOTENCY_MISMATCH', 409],
    ['RESERVATION_EXPIRED', 410],
  ] as const)('maps %s to %i and keeps its details', (code, status) => {
    const response = errorResponse(new DomainError(code, 'why', { scope: 'tenant:a' }), 'req-2');

    expect(response.statusCode).toBe(status);
    expect(JSON.parse(String(response.body))).toEqual({
      error: code,
      message: 'why',
      request_id: 'req-2',
      details: { scope: 'tenant:a' },
    });
  });
});

describe('busy answers', () => {
  const now = Date.UTC(2026, 10, 1, 12, 0, 0, 250);

  it.each([
    ['CONTENTION', 200],
    ['THROTTLED', 500],
    ['CONCURRENCY', 1_000],
  ] as const)(
    'answer %s as 429 LIMIT_EXCEEDED with Retry-After and X-RateLimit-Reset',
    (reason, ms) => {
      const response = errorResponse(new RetryLaterError(reason, ms), 'req-3', undefined, now);

      expect(response.statusCode).toBe(429);
      expect(response.headers).toMatchObject({
        'retry-after': '1',
        'x-ratelimit-reset': String(Math.ceil((now + 1_000) / 1000)),
      });
      expect(response.headers).not.toHaveProperty('x-ratelimit-remaining');
      expect(JSON.parse(String(response.body))).toEqual({
        error: 'LIMIT_EXCEEDED',
        message: expect.stringContaining('retry after Retry-After seconds'),
        request_id: 'req-3',
        details: { reason, retry_after_ms: ms },
      });
    },
  );

  it('carry what is left of a limit that applies, and when it resets', () => {
    const limit = { remaining: 0, resetAtMs: now + 30_500 };

    const response = errorResponse(
      new RetryLaterError('THROTTLED', 30_500, { limit }),
      'req-4',
      undefined,
      now,
    );

    expect(response.headers).toMatchObject({
      'retry-after': '31',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': String(Math.ceil((now + 30_500) / 1000)),
    });
  });

  it('answer a table that did not answer, a write’s outcome unknown, 503 INTERNAL_ERROR', () => {
    const response = errorResponse(new RetryLaterError('TIMEOUT', 1_000), 'req-5', undefined, now);

    expect(response.statusCode).toBe(503);
    expect(response.headers).toMatchObject({ 'retry-after': '1' });
    expect(response.headers).not.toHaveProperty('x-ratelimit-reset');
    expect(JSON.parse(String(response.body))).toMatchObject({
      error: 'INTERNAL_ERROR',
      details: { reason: 'TIMEOUT', retry_after_ms: 1_000 },
    });
  });
});
