import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { L, ledgers } from '../helpers/balances.js';
import { expectError } from '../helpers/errors.js';
import { type GivenTenant, givenTenantWith, reserveBody, usd } from '../helpers/fixtures.js';
import { errorOf, type Json, type Response, request } from '../helpers/http.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// Busy is 429 LIMIT_EXCEEDED (docs/decisions.md § Contention): the service of this file runs
// with DynamoDB's conflicts emulated (infra/local/contention.ts) on one unsharded budget that is
// kept from growing (AUTO_SHARDS_MAX=1), and takes 8 requests at a time with none waiting, as a
// function's reserved concurrency would (few enough that a burst of 160 meets the cap even on a
// loaded machine, where the emulated conflicts alone may all be retried away). Every busy answer carries Retry-After and X-RateLimit-Reset, and nothing of
// it was written; settling work retries longer than taking work.
const stack = useTestStack({
  contention: {},
  env: { AUTO_SHARDS_MAX: '1', LOCAL_MAX_IN_FLIGHT: '8', LOCAL_ADMISSION_QUEUE: '0' },
});
const { create: reserve, commit, listed } = reservationsApi(stack);
let client: typeof import('../../functions/store/client.js')['dynamoClient'];
let config: { REQUEST_DEADLINE_MS: number };

beforeAll(async () => {
  // Imported after the stack: the same module graph (and configuration) as the servers.
  client = (await import('../../functions/store/client.js')).dynamoClient;
  config = (await import('../../functions/config/settings.js')).config as typeof config;
});

afterEach(() => {
  client.middlewareStack.remove('persistentConflict');
  config.REQUEST_DEADLINE_MS = 20_000;
});

/** A busy answer: SPEC's error body with LIMIT_EXCEEDED and why, and the headers to back off by. */
function expectBusy(res: Response, reasons: readonly string[]): void {
  const error = expectError(res, 429, 'LIMIT_EXCEEDED', 'runtime');
  expect(reasons).toContain(error.details?.reason);
  expect(Number(error.details?.retry_after_ms)).toBeGreaterThan(0);
  expect(res.headers.get('x-ratelimit-remaining')).toBeNull();
}

/** Nothing was written for a key answered busy: no reservation carries it. */
async function expectNothingHeld(t: GivenTenant, keys: readonly unknown[]) {
  for (const key of keys) expect(await listed(t, key)).toBeUndefined();
}

describe('a busy unsharded budget under DynamoDB contention', () => {
  it('answers what it cannot take 429 with Retry-After and X-RateLimit-Reset, writes none of it, and settles every hold it granted', async () => {
    const t = await givenTenantWith(stack, { '': 10_000_000 });
    const bodies = Array.from({ length: 160 }, () =>
      reserveBody({ subject: { tenant: t.tenant }, estimate: usd(100) }),
    );

    const answers = await Promise.all(bodies.map((b) => reserve(t, b)));
    const granted = answers.filter((a) => a.status === 200);
    // Settling work tries longest, and a client honours Retry-After: every hold settles.
    const settled = await Promise.all(
      granted.map(async (r) => {
        for (let attempt = 0; ; attempt++) {
          const c = await commit(t, r.body.reservation_id, {
            idempotency_key: `c-${String(r.body.reservation_id)}`,
            actual: usd(60),
          });
          if (c.status !== 429 || attempt > 20) return c;
          await new Promise((resolve) =>
            setTimeout(resolve, 1_000 * Number(c.headers.get('retry-after'))),
          );
        }
      }),
    );

    const busy = answers.filter((a) => a.status === 429);
    expect(granted.length + busy.length).toBe(bodies.length);
    expect(busy.length).toBeGreaterThan(0);
    for (const b of busy) expectBusy(b, ['CONTENTION', 'CONCURRENCY']);
    await expectNothingHeld(
      t,
      bodies.filter((_, i) => answers[i]?.status === 429).map((b) => b.idempotency_key),
    );
    expect(settled.map((c) => c.status)).toEqual(granted.map(() => 200));
    const spent = granted.length * 60;
    expect(await ledgers(stack, t)).toEqual({ '': L(10_000_000, spent, 0, 0, 10_000_000 - spent) });
  });

  it('stops retrying at the request’s deadline, between attempts: 429, nothing written', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
    let attempts = 0;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'TransactWriteItemsCommand') return next(args);
        attempts++;
        // A slow table that keeps cancelling: each attempt takes 100 ms.
        await new Promise((resolve) => setTimeout(resolve, 100));
        throw new TransactionCanceledException({
          message: 'Transaction cancelled',
          $metadata: {},
          CancellationReasons: [{ Code: 'TransactionConflict' }],
        });
      },
      { step: 'initialize', name: 'persistentConflict' },
    );
    config.REQUEST_DEADLINE_MS = 250;
    const body = reserveBody({ estimate: usd(400) });

    const failed = await reserve(t, body);

    expectBusy(failed, ['CONTENTION']);
    // A reserve's budget is 7 attempts (at least 700 ms here); the deadline (250 ms) ended it
    // after 2 or 3, or after the first on a machine so loaded that the request's own reads ate it.
    expect(attempts).toBeGreaterThanOrEqual(1);
    expect(attempts).toBeLessThan(5);
    await expectNothingHeld(t, [body.idempotency_key]);
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 0, 0, 0, 10_000),
      'workspace:w': L(10_000, 0, 0, 0, 10_000),
    });
  });

  it('answers requests past the 8 in flight 429 CONCURRENCY at once, health excepted', async () => {
    const t = await givenTenantWith(stack, { '': 10_000_000 });
    const reads = await Promise.all(
      Array.from({ length: 60 }, () =>
        request<Json>('GET', `${stack.runtimeUrl}/v1/balances?tenant=${t.tenant}`, {
          headers: t.headers,
        }),
      ),
    );
    const health = await request('GET', `${stack.runtimeUrl}/actuator/health`);

    const refused = reads.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) expect(errorOf(r).details?.reason).toBe('CONCURRENCY');
    for (const r of refused) expectBusy(r, ['CONCURRENCY']);
    expect(reads.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(8);
    expect(health.status).toBe(200);
  });
});
