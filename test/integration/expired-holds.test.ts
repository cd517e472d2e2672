import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { L, ledgers } from '../helpers/balances.js';
import { testClock } from '../helpers/clock.js';
import { givenBudgets, givenTenant, usd } from '../helpers/fixtures.js';
import { request } from '../helpers/http.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// Server time stands still until a test moves it; moving it would expire the holds of a test
// running alongside, so these tests run one at a time, each on its own tenant. The stack runs
// no sweeper: whatever expires here, a request or an explicit sweep expired.
const clock = testClock({ frozen: true });
const stack = useTestStack({ clock });
const { reserve, getReservation } = reservationsApi(stack);
const rt = (path: string) => `${stack.runtimeUrl}${path}`;

const sweepOnce = async () => {
  const { sweepOnce: sweep } = await import('../../functions/jobs/expire-reservations.js');
  return sweep();
};

/** A tenant whose workspace budget one short reservation fills completely, already past due. */
async function filledByAnExpiredHold() {
  const t = await givenTenant(stack);
  await givenBudgets(stack, t, { '': 10_000, 'workspace:w': 1_000 });
  const hold = await reserve(t, { ttl_ms: 1_000, grace_period_ms: 0, estimate: usd(1_000) });
  expect(hold.status).toBe(200);
  clock.advance(1_001);
  return { t, holdId: String(hold.body.reservation_id) };
}

describe('an expired hold never refuses work (no sweeper ran)', () => {
  it('a reserve that only the expired hold blocks succeeds, and the hold is finalized EXPIRED once', async () => {
    const { t, holdId } = await filledByAnExpiredHold();

    const next = await reserve(t, { estimate: usd(1_000) });

    expect(next.status, JSON.stringify(next.body)).toBe(200);
    expect((await getReservation(t, holdId)).status).toBe(410);
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 0, 1_000, 0, 9_000),
      'workspace:w': L(1_000, 0, 1_000, 0, 0),
    });
  });

  it('so do a dry run, a decide and an event', async () => {
    const dry = await filledByAnExpiredHold();
    const decided = await filledByAnExpiredHold();
    const evented = await filledByAnExpiredHold();
    const subject = { workspace: 'w' };
    const action = { kind: 'llm.completion', name: 'model-x' };

    const dryRun = await reserve(dry.t, { estimate: usd(1_000), dry_run: true });
    const decide = await request('POST', rt('/v1/decide'), {
      headers: decided.t.headers,
      body: { idempotency_key: randomUUID(), subject, action, estimate: usd(1_000) },
    });
    const event = await request('POST', rt('/v1/events'), {
      headers: evented.t.headers,
      body: { idempotency_key: randomUUID(), subject, action, actual: usd(1_000) },
    });

    expect(dryRun.body.decision).toBe('ALLOW');
    expect(decide.body.decision).toBe('ALLOW');
    expect(event.status, JSON.stringify(event.body)).toBe(201);
    expect((await ledgers(stack, evented.t))['workspace:w']).toEqual(L(1_000, 1_000, 0, 0, 0));
  });

  it('still refuses with 409 when the holds blocking the scope are not yet due', async () => {
    const t = await givenTenant(stack);
    await givenBudgets(stack, t, { '': 10_000, 'workspace:w': 1_000 });
    await reserve(t, { ttl_ms: 60_000, estimate: usd(1_000) });

    const next = await reserve(t, { estimate: usd(1) });

    expect(next.status).toBe(409);
    expect(next.body.error).toBe('BUDGET_EXCEEDED');
  });
});

describe('the sweeper', () => {
  it('expires 150 due reservations in batches, each exactly once, finalized when expired', async () => {
    const t = await givenTenant(stack);
    await givenBudgets(stack, t, { '': 1_000_000, 'workspace:w': 1_000_000 });
    const held = await Promise.all(
      Array.from({ length: 150 }, () =>
        reserve(t, { ttl_ms: 1_000, grace_period_ms: 0, estimate: usd(10) }),
      ),
    );
    expect(held.every((r) => r.status === 200)).toBe(true);
    clock.advance(5_000);
    const expiredAt = clock.now();

    const first = await sweepOnce();
    const again = await sweepOnce();

    expect(first.expired).toBe(150);
    expect(again.expired).toBe(0);
    expect(await ledgers(stack, t)).toEqual({
      '': L(1_000_000, 0, 0, 0, 1_000_000),
      'workspace:w': L(1_000_000, 0, 0, 0, 1_000_000),
    });
    const read = await getReservation(t, held[0]?.body.reservation_id);
    expect(read.status).toBe(410);
    expect(
      (read.body.details as { reservation: { finalized_at_ms: number } }).reservation
        .finalized_at_ms,
    ).toBe(expiredAt);
  });
});
