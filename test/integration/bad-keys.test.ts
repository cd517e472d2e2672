import { describe, expect, it } from 'vitest';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import { adminHeaders, givenTenant } from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { captureOutput } from '../helpers/output.js';
import { useTestStack } from '../helpers/scaffold.js';

// Floods of bad keys cost nothing (issue 25 point 3): the log line of each request counts its
// DynamoDB calls, read here from the process's own output.
const KEY_CACHE_MS = 5_000;
const clock = testClock({ frozen: true });
const stack = useTestStack({
  clock,
  env: { LOG_LEVEL: 'info', API_KEY_CACHE_TTL_MS: String(KEY_CACHE_MS) },
});

const linesDuring = captureOutput();

/** Introspects with `key` and returns the answer with the request's log line. */
async function introspect(key: string) {
  let res: Awaited<ReturnType<typeof request<Json>>> | undefined;
  const lines = await linesDuring(async () => {
    res = await request('GET', `${stack.runtimeUrl}/v1/auth/introspect`, {
      headers: { 'x-service-api-key': key },
    });
  });
  const line = lines.find((l) => l.msg === 'request' || l.message === 'request');
  expect(line, 'the request’s log line').toBeDefined();
  if (!res) throw new Error('no answer');
  return { res, calls: line?.dynamodb_calls };
}

/** A secret of our shape that no key has (yet): 32 base64url characters after the prefix. */
const shapedSecret = (fill: string) => `cyc_live_${fill.repeat(32).slice(0, 32)}`;

describe('bad keys', () => {
  it.each([
    ['garbage', 'not-a-key'],
    ['our prefix, too short', 'cyc_live_0000'],
    ['our prefix, a character no key has', `cyc_live_${'!'.repeat(32)}`],
    ['another scheme', `sk-${'a'.repeat(48)}`],
  ])('answers a key not of our shape (%s) 401 without reading the table', async (_what, key) => {
    for (let i = 0; i < 3; i++) {
      const { res, calls } = await introspect(key);
      expectError(res, 401, 'UNAUTHORIZED', 'runtime');
      expect(calls).toBe(0);
    }
  });

  it('reads the table once for an unknown key of our shape, then answers it from the negative cache', async () => {
    const key = shapedSecret('U');
    const first = await introspect(key);
    expectError(first.res, 401, 'UNAUTHORIZED', 'runtime');
    expect(first.calls).toBe(1);
    for (let i = 0; i < 5; i++) {
      const again = await introspect(key);
      expectError(again.res, 401, 'UNAUTHORIZED', 'runtime');
      expect(again.calls).toBe(0);
    }
    // Past the bound the table is asked again (once), then cached again.
    clock.advance(KEY_CACHE_MS);
    expect((await introspect(key)).calls).toBe(1);
    expect((await introspect(key)).calls).toBe(0);
  });

  it('lets a key created after it was cached as unknown work within the bound', async () => {
    const { tenant } = await givenTenant(stack);
    const secret = shapedSecret('N');
    expect((await introspect(secret)).calls).toBe(1);
    // The key appears in the table as the create operation writes it, under this very secret.
    const { hashKeySecret, keyPrefixOf } = await import('../../functions/domain/api-keys.js');
    const { DEFAULT_PERMISSIONS } = await import('../../functions/domain/permissions.js');
    const { newApiKeyTransaction } = await import('../../functions/store/api-keys.js');
    const { transact } = await import('../../functions/store/transact.js');
    const outcome = await transact(
      newApiKeyTransaction(hashKeySecret(secret), {
        keyId: `key_${'ab'.repeat(8)}`,
        keyPrefix: keyPrefixOf(secret),
        tenant,
        name: 'created late',
        permissions: DEFAULT_PERMISSIONS,
        createdAt: new Date(clock.now()).toISOString(),
        status: 'ACTIVE',
      }),
    );
    expect(outcome.kind).toBe('committed');
    // Within the bound it may still be refused (from the cache, no read) …
    const cached = await introspect(secret);
    expectError(cached.res, 401, 'UNAUTHORIZED', 'runtime');
    expect(cached.calls).toBe(0);
    // … and at the bound it works.
    clock.advance(KEY_CACHE_MS);
    const works = await introspect(secret);
    expect(works.res.status, JSON.stringify(works.res.body)).toBe(200);
  });

  it('reads the table once for a burst of one unknown key: concurrent lookups share the read', async () => {
    const key = shapedSecret('B');
    const lines = await linesDuring(() =>
      Promise.all(
        Array.from({ length: 20 }, () =>
          request('GET', `${stack.runtimeUrl}/v1/auth/introspect`, {
            headers: { 'x-service-api-key': key },
          }),
        ),
      ),
    );
    const requests = lines.filter((l) => l.msg === 'request' || l.message === 'request');
    expect(requests).toHaveLength(20);
    expect(requests.every((l) => l.status === 401)).toBe(true);
    expect(requests.reduce((n, l) => n + Number(l.dynamodb_calls ?? 0), 0)).toBe(1);
  });

  it('answers a revoked key 401 from the cache: one table read per bound', async () => {
    // Without balances:read, so the ledger audit reads with a second key, not the revoked one.
    const given = await givenTenant(stack, ['reservations:create']);
    expect((await introspect(given.key)).res.status).toBe(200);
    const revoked = await request('DELETE', `${stack.adminUrl}/v1/admin/api-keys/${given.keyId}`, {
      headers: adminHeaders,
    });
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    clock.advance(KEY_CACHE_MS);
    const first = await introspect(given.key);
    expectError(first.res, 401, 'UNAUTHORIZED', 'runtime');
    expect(first.calls).toBe(1);
    for (let i = 0; i < 3; i++) {
      const again = await introspect(given.key);
      expectError(again.res, 401, 'UNAUTHORIZED', 'runtime');
      expect(again.calls).toBe(0);
    }
  });
});
