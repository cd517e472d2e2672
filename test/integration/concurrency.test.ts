import { randomUUID } from 'node:crypto';
import {
  ProvisionedThroughputExceededException,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { L, ledgers } from '../helpers/balances.js';
import { testClock } from '../helpers/clock.js';
import { expectBusyHeaders, expectError } from '../helpers/errors.js';
import { type GivenTenant, givenTenantWith, reserveBody, sleep, usd } from '../helpers/fixtures.js';
import { errorOf, type Response } from '../helpers/http.js';
import { reservationsApi, withoutLease } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// Server time runs with real time, so requests race across a deadline as they would in
// production; a test moves it forward to just before the deadline instead of waiting for it.
// The tests of this file run one at a time. Budgets do not grow shards by themselves here: the
// injected conflicts test the retry policy, attempt by attempt (growth: auto-shards.test.ts).
const clock = testClock();
const stack = useTestStack({ clock, env: { AUTO_SHARDS_MAX: '1' } });
const { create: reserve, commit, release, extend, getReservation, listed } = reservationsApi(stack);
let client: typeof import('../../functions/store/client.js')['documentClient'];
let sweepOnce: typeof import('../../functions/jobs/expire-reservations.js')['sweepOnce'];

beforeAll(async () => {
  // Imported after the stack: the same module graph (and configuration) as the servers.
  client = (await import('../../functions/store/client.js')).documentClient;
  sweepOnce = (await import('../../functions/jobs/expire-reservations.js')).sweepOnce;
});

// ---- helpers --------------------------------------------------------------------------------

/** The status of a reservation as listed (GET answers 410 once it is EXPIRED). */
const statusOf = async (t: GivenTenant, idempotencyKey: unknown) =>
  (await listed(t, idempotencyKey))?.status as string | undefined;

/** Real time until the server clock reads `epochMs`: the race window, a few hundred ms. */
const until = (epochMs: number) => sleep(Math.max(0, epochMs - clock.now()));

/** A tenant with 10 000 on its root and workspace:w, and one reservation: 1 s TTL, no grace. */
async function givenReservationNearItsDeadline() {
  const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
  const body = reserveBody({ ttl_ms: 1_000, grace_period_ms: 0 });
  const r = await reserve(t, body);
  const [id, expiresAt] = [String(r.body.reservation_id), Number(r.body.expires_at_ms)];
  return { t, idempotencyKey: body.idempotency_key, id, expiresAt };
}

const outcome = (res: Response) =>
  res.status === 200 ? 200 : `${res.status} ${errorOf(res).error}`;

// ---- DynamoDB fault injection (same client as the servers) ----------------------------------

const injected: string[] = [];

/** Runs `before` ahead of every TransactWriteItems the servers send, until the test ends. */
function onTransactWrite(name: string, before: (input: string) => Promise<void>): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'TransactWriteItemsCommand') {
        await before(JSON.stringify(args.input));
      }
      return next(args);
    },
    { step: 'initialize', name },
  );
  injected.push(name);
}

afterEach(() => {
  for (const name of injected.splice(0)) client.middlewareStack.remove(name);
});

const conflict = () =>
  new TransactionCanceledException({
    message: 'Transaction cancelled, please refer cancellation reasons for specific reasons',
    $metadata: {},
    CancellationReasons: [{ Code: 'TransactionConflict' }],
  });

// ---- tests ----------------------------------------------------------------------------------

describe('concurrent reservations on one ledger', () => {
  it('admits exactly as many as fit: 25 of 100 succeed, 75 answer 409 BUDGET_EXCEEDED', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 2_500 });
    const bodies = Array.from({ length: 100 }, () => reserveBody({ estimate: usd(100) }));

    const results = await Promise.all(bodies.map((b) => reserve(t, b)));

    const tally: Record<string, number> = {};
    for (const r of results) tally[outcome(r)] = (tally[outcome(r)] ?? 0) + 1;
    expect(tally).toEqual({ 200: 25, '409 BUDGET_EXCEEDED': 75 });
    const ids = results.filter((r) => r.status === 200).map((r) => r.body.reservation_id);
    expect(new Set(ids).size).toBe(25);
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 0, 2_500, 0, 7_500),
      'workspace:w': L(2_500, 0, 2_500, 0, 0),
    });
    const active = await Promise.all(bodies.map((b) => statusOf(t, b.idempotency_key)));
    expect(active.filter((s) => s === 'ACTIVE')).toHaveLength(25);
    expect(active.filter((s) => s !== 'ACTIVE').every((s) => s === undefined)).toBe(true);
  });

  it('creates one reservation for one request sent 20 times at once, every body identical', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
    const body = reserveBody({ estimate: usd(300) });

    const results = await Promise.all(Array.from({ length: 20 }, () => reserve(t, body)));

    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    for (const r of results)
      expect(withoutLease(r.body)).toEqual(withoutLease(results[0]?.body ?? {}));
    expect(await statusOf(t, body.idempotency_key)).toBe('ACTIVE');
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 0, 300, 0, 9_700),
      'workspace:w': L(10_000, 0, 300, 0, 9_700),
    });
  });

  it('charges once for one commit sent 20 times at once, every body identical', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
    const r = await reserve(t, reserveBody({ estimate: usd(300) }));
    const body = { idempotency_key: randomUUID(), actual: usd(120) };

    const results = await Promise.all(
      Array.from({ length: 20 }, () => commit(t, r.body.reservation_id, body)),
    );

    expect(results.map((x) => x.status)).toEqual(Array(20).fill(200));
    for (const x of results) expect(x.body).toEqual(results[0]?.body);
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 120, 0, 0, 9_880),
      'workspace:w': L(10_000, 120, 0, 0, 9_880),
    });
  });
});

describe('commit, release, extend and the sweeper racing at the deadline', () => {
  it('settles each of 30 reservations exactly once and keeps the ledgers exact', async () => {
    const t = await givenTenantWith(stack, { '': 1_000_000, 'workspace:w': 1_000_000 });
    const bodies = Array.from({ length: 30 }, () =>
      reserveBody({ estimate: usd(100), ttl_ms: 1_000, grace_period_ms: 0 }),
    );
    const created = await Promise.all(bodies.map((b) => reserve(t, b)));
    expect(created.map((c) => c.status)).toEqual(Array(30).fill(200));
    const expiries = created.map((c) => Number(c.body.expires_at_ms));
    const actualOf = (i: number) => 10 + i;

    // Each reservation is hit from 75 ms before to 70 ms after its deadline, while the
    // sweeper runs back to back over the whole window.
    clock.advanceTo(Math.min(...expiries) - 100);
    const sweeping = (async () => {
      while (clock.now() < Math.max(...expiries) + 150) {
        await sweepOnce();
        await sleep(5);
      }
    })();
    const raced = await Promise.all(
      created.map(async (c, i) => {
        await until((expiries[i] ?? 0) - 75 + 5 * i);
        const id = c.body.reservation_id;
        const calls = [
          () => commit(t, id, { actual: usd(actualOf(i)) }),
          () => release(t, id),
          () => extend(t, id, { extend_by_ms: 1_000 }),
        ];
        // Rotate the order in which the three leave, so no operation is always first.
        const order = [0, 1, 2].map((k) => (k + i) % 3);
        const responses: Response[] = [];
        await Promise.all(
          order.map(async (k) => {
            responses[k] = await (calls[k] as () => Promise<Response>)();
          }),
        );
        return responses;
      }),
    );
    await sweeping;
    // Whatever was extended expires one second later; sweep once more after that.
    clock.advanceTo(Math.max(...expiries) + 1_000 + 100);
    await sweepOnce();

    let spent = 0;
    for (const [i, [committed, released, extended]] of raced.entries()) {
      if (!committed || !released || !extended) throw new Error('missing response');
      const status = await statusOf(t, bodies[i]?.idempotency_key);
      const context = `reservation ${i}: commit ${outcome(committed)}, release ${outcome(released)}, extend ${outcome(extended)}, final ${status}`;
      const allowed = [200, '409 RESERVATION_FINALIZED', '410 RESERVATION_EXPIRED'];
      for (const res of [committed, released, extended]) {
        expect(allowed, context).toContain(outcome(res));
      }
      expect(committed.status === 200 && released.status === 200, context).toBe(false);
      const expected =
        committed.status === 200 ? 'COMMITTED' : released.status === 200 ? 'RELEASED' : 'EXPIRED';
      expect(status, context).toBe(expected);
      if (status === 'COMMITTED') {
        spent += actualOf(i);
        const got = await getReservation(t, created[i]?.body.reservation_id);
        expect(got.body.committed, context).toEqual(usd(actualOf(i)));
      }
    }
    expect(await ledgers(stack, t)).toEqual({
      '': L(1_000_000, spent, 0, 0, 1_000_000 - spent),
      'workspace:w': L(1_000_000, spent, 0, 0, 1_000_000 - spent),
    });
  });

  it('does not answer 410 to a release that loses to a commit: the reservation is COMMITTED', async () => {
    // Commit A arrives before the deadline and its write is slow; release B arrives after the
    // deadline, reads the reservation still ACTIVE, and tries to expire it.
    const { t, idempotencyKey, id, expiresAt } = await givenReservationNearItsDeadline();
    onTransactWrite('slowSettle', async (input) => {
      if (!input.includes(id)) return;
      if (input.includes('"COMMITTED"')) await sleep(200);
      if (input.includes('"EXPIRED"')) await sleep(500);
    });
    clock.advanceTo(expiresAt - 150);

    const [a, b] = await Promise.all([
      until(expiresAt - 80).then(() => commit(t, id, { actual: usd(60) })),
      until(expiresAt + 20).then(() => release(t, id)),
    ]);

    const status = await statusOf(t, idempotencyKey);
    expect(outcome(a)).toBe(200);
    expect(status).toBe('COMMITTED');
    // SPEC: COMMITTED | release | 409 RESERVATION_FINALIZED; a 410 would claim an expiry
    // that never happened (the 60 committed stay spent).
    expect(outcome(b), `release answered ${outcome(b)} for a ${status} reservation`).toBe(
      '409 RESERVATION_FINALIZED',
    );
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(10_000, 60, 0, 0, 9_940));
  });

  it('does not answer 410 to a commit while a concurrent extend keeps the reservation ACTIVE', async () => {
    // Extend E arrives before expiry with a slow write; commit C arrives just after expiry,
    // reads the old expiry, and tries to expire the reservation after E has moved it.
    const { t, idempotencyKey, id, expiresAt } = await givenReservationNearItsDeadline();
    onTransactWrite('slowExtendAndExpiry', async (input) => {
      if (!input.includes(id)) return;
      if (input.includes('"EXPIRED"')) await sleep(400);
      else if (input.includes('"extend"') || input.includes('#expires')) await sleep(250);
    });
    clock.advanceTo(expiresAt - 150);

    const [e, c] = await Promise.all([
      until(expiresAt - 100).then(() => extend(t, id, { extend_by_ms: 5_000 })),
      until(expiresAt + 30).then(() => commit(t, id, { actual: usd(60) })),
    ]);

    const status = await statusOf(t, idempotencyKey);
    const story = `extend ${outcome(e)}, commit ${outcome(c)}, final ${status}`;
    // Either order is a valid serialization, but the answers must agree with each other and
    // with the state: 410 means "finalized as EXPIRED" (SPEC § Errors).
    const consistent =
      (outcome(e) === 200 && outcome(c) === 200 && status === 'COMMITTED') ||
      (outcome(e) === '410 RESERVATION_EXPIRED' &&
        outcome(c) === '410 RESERVATION_EXPIRED' &&
        status === 'EXPIRED');
    expect(consistent, story).toBe(true);
  });
});

describe('throttling', () => {
  it('retries a throttled transaction, then answers 429 LIMIT_EXCEEDED THROTTLED with nothing written', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
    let attempts = 0;
    onTransactWrite('throttled', async () => {
      attempts++;
      throw new TransactionCanceledException({
        message: 'Transaction cancelled',
        $metadata: {},
        CancellationReasons: [{ Code: 'ThrottlingError' }, { Code: 'None' }],
      });
    });

    const failed = await reserve(t, reserveBody({ estimate: usd(400) }));
    client.middlewareStack.remove('throttled');

    expect(attempts).toBe(7);
    expectError(failed, 429, 'LIMIT_EXCEEDED');
    expect(errorOf(failed).details).toEqual({ reason: 'THROTTLED', retry_after_ms: 200 });
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 0, 0, 0, 10_000),
      'workspace:w': L(10_000, 0, 0, 0, 10_000),
    });
  });

  it('answers 429 THROTTLED when a read stays throttled through the SDK retries', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'BatchGetItemCommand') {
          throw new ProvisionedThroughputExceededException({ message: 'slow down', $metadata: {} });
        }
        return next(args);
      },
      { step: 'initialize', name: 'throttledRead' },
    );
    injected.push('throttledRead');

    const failed = await reserve(t, reserveBody({ estimate: usd(400) }));

    expectError(failed, 429, 'LIMIT_EXCEEDED');
    expect(failed.headers.get('retry-after')).toBe('1');
    expect(errorOf(failed).details).toEqual({ reason: 'THROTTLED', retry_after_ms: 500 });
  });
});

describe('TransactionConflict cancellations', () => {
  it('retries injected conflicts: reserve and commit still succeed, each applied once', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
    let calls = 0;
    let failures = 0;
    onTransactWrite('injectConflict', async () => {
      // Attempts go fail, fail, succeed: both operations retry twice before they land.
      if (calls++ % 3 !== 2) {
        failures++;
        throw conflict();
      }
    });
    const body = reserveBody({ estimate: usd(400) });

    const r = await reserve(t, body);
    const c = await commit(t, r.body.reservation_id, { actual: usd(150) });

    expect(failures).toBe(4);
    expect([r.status, c.status]).toEqual([200, 200]);
    expect(await statusOf(t, body.idempotency_key)).toBe('COMMITTED');
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 150, 0, 0, 9_850),
      'workspace:w': L(10_000, 150, 0, 0, 9_850),
    });
  });

  it('answers 429 LIMIT_EXCEEDED with Retry-After and X-RateLimit-Reset on a persistent conflict, changes nothing, and a retry is fresh', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
    let attempts = 0;
    onTransactWrite('persistentConflict', async () => {
      attempts++;
      throw conflict();
    });
    const body = reserveBody({ estimate: usd(400) });

    const failed = await reserve(t, body);
    client.middlewareStack.remove('persistentConflict');
    const afterFailure = await ledgers(stack, t);
    const recorded = await statusOf(t, body.idempotency_key);
    const retried = await reserve(t, body);

    // A reserve is turned away after its short budget (6 retries), before it holds anything.
    expect(attempts).toBe(7);
    expect(failed.status).toBe(429);
    expect(failed.headers.get('retry-after')).toBe('1');
    expectBusyHeaders(failed);
    // No limit of the caller's applies to contention: no X-RateLimit-Remaining.
    expect(failed.headers.get('x-ratelimit-remaining')).toBeNull();
    expect(failed.body).toEqual({
      error: 'LIMIT_EXCEEDED',
      message: expect.any(String),
      request_id: expect.any(String),
      details: { reason: 'CONTENTION', retry_after_ms: 200 },
    });
    expect(JSON.stringify(failed.body)).not.toMatch(/Transaction|cancel/i);
    expect(afterFailure).toEqual({
      '': L(10_000, 0, 0, 0, 10_000),
      'workspace:w': L(10_000, 0, 0, 0, 10_000),
    });
    expect(recorded).toBeUndefined();
    expect(retried.status).toBe(200);
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 0, 400, 0, 9_600),
      'workspace:w': L(10_000, 0, 400, 0, 9_600),
    });
  });

  it('tries a commit longer than a reserve, then answers 429 and leaves the reservation ACTIVE', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
    const body = reserveBody({ estimate: usd(400) });
    const r = await reserve(t, body);
    let attempts = 0;
    onTransactWrite('persistentConflict', async () => {
      attempts++;
      throw conflict();
    });

    const failed = await commit(t, r.body.reservation_id, { actual: usd(100) });
    client.middlewareStack.remove('persistentConflict');

    // Settling work gets the long budget (12 retries): a granted hold should get settled.
    expect(attempts).toBe(13);
    expectError(failed, 429, 'LIMIT_EXCEEDED');
    expect(errorOf(failed).details).toEqual({ reason: 'CONTENTION', retry_after_ms: 400 });
    expect(await statusOf(t, body.idempotency_key)).toBe('ACTIVE');
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 0, 400, 0, 9_600),
      'workspace:w': L(10_000, 0, 400, 0, 9_600),
    });
  });
});
