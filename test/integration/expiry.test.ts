import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { L, ledgers } from '../helpers/balances.js';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import { givenTenantWith, usd } from '../helpers/fixtures.js';
import type { Response } from '../helpers/http.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// Deadlines on server time: the clock stands still until a test moves it, so every request
// lands at an exact instant before or after a deadline. Moving it would expire the holds of any
// test running alongside, so this file's tests run one at a time, each on its own tenant.
const clock = testClock({ frozen: true });
const stack = useTestStack({ clock });
const { reserve, commit, release, extend, getReservation, listed } = reservationsApi(stack);

describe('commit, release and extend at the deadline', () => {
  it('commit, release and extend after TTL plus grace answer 410 and finalize as EXPIRED', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
    const short = { ttl_ms: 1_000, grace_period_ms: 0, estimate: usd(100) };
    const keys = [randomUUID(), randomUUID(), randomUUID()];
    const [a, b, c] = await Promise.all(
      keys.map((k) => reserve(t, { ...short, idempotency_key: k })),
    );
    if (!a || !b || !c) throw new Error('reservations missing');
    clock.advanceTo(Number(a.body.expires_at_ms) + 150);

    const committed = await commit(t, a.body.reservation_id, { actual: usd(50) });
    const released = await release(t, b.body.reservation_id);
    const extended = await extend(t, c.body.reservation_id, { extend_by_ms: 60_000 });

    expectError(committed, 410, 'RESERVATION_EXPIRED');
    expectError(released, 410, 'RESERVATION_EXPIRED');
    expectError(extended, 410, 'RESERVATION_EXPIRED');
    // Finalized by the requests themselves (this stack runs no sweeper): holds are returned.
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 0, 0, 0, 10_000),
      'workspace:w': L(1_000, 0, 0, 0, 1_000),
    });
    for (const key of keys) expect((await listed(t, key))?.status).toBe('EXPIRED');
    const got = await getReservation(t, a.body.reservation_id);
    if (got.status === 200) expect(got.body.status).toBe('EXPIRED');
    else expectError(got, 410, 'RESERVATION_EXPIRED');
    // EXPIRED | commit, release, extend | 410, unchanged.
    for (const again of [
      await commit(t, a.body.reservation_id, { actual: usd(50) }),
      await release(t, a.body.reservation_id),
      await extend(t, a.body.reservation_id, { extend_by_ms: 1_000 }),
    ]) {
      expectError(again, 410, 'RESERVATION_EXPIRED');
    }
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 0, 0, 0, 1_000));
  });

  it('applies the default grace period of 5000 ms to commit and release, never to extend', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
    const [inGrace, noGrace, lateInGrace, pastGrace] = await Promise.all([
      reserve(t, { ttl_ms: 1_000 }),
      reserve(t, { ttl_ms: 1_000, grace_period_ms: 0 }),
      reserve(t, { ttl_ms: 1_000 }),
      reserve(t, { ttl_ms: 1_000 }),
    ]);
    if (!inGrace || !noGrace || !lateInGrace || !pastGrace) throw new Error('missing');
    const expiry = (r: Response) => Number(r.body.expires_at_ms);

    clock.advanceTo(Math.max(expiry(inGrace), expiry(noGrace)) + 300);
    const extendInGrace = await extend(t, inGrace.body.reservation_id, { extend_by_ms: 10_000 });
    const commitInGrace = await commit(t, inGrace.body.reservation_id, { actual: usd(40) });
    const commitNoGrace = await commit(t, noGrace.body.reservation_id, { actual: usd(40) });
    clock.advanceTo(expiry(lateInGrace) + 4_600);
    const releaseLate = await release(t, lateInGrace.body.reservation_id);
    clock.advanceTo(expiry(pastGrace) + 5_000 + 300);
    const releasePast = await release(t, pastGrace.body.reservation_id);

    // Past TTL, within grace: extend is refused (no grace), but the reservation stays usable.
    expectError(extendInGrace, 410, 'RESERVATION_EXPIRED');
    expect(commitInGrace.status).toBe(200);
    expectError(commitNoGrace, 410, 'RESERVATION_EXPIRED');
    expect(releaseLate.status).toBe(200);
    expectError(releasePast, 410, 'RESERVATION_EXPIRED');
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 40, 0, 0, 9_960),
      'workspace:w': L(1_000, 40, 0, 0, 960),
    });
  });

  it('keeps an extended reservation alive past its original expiry', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const r = await reserve(t, { ttl_ms: 1_000, grace_period_ms: 0 });
    const extended = await extend(t, r.body.reservation_id, { extend_by_ms: 2_000 });
    expect(extended.body.expires_at_ms).toBe(Number(r.body.expires_at_ms) + 2_000);

    clock.advanceTo(Number(r.body.expires_at_ms) + 300);
    const res = await commit(t, r.body.reservation_id, { actual: usd(70) });

    expect(res.status).toBe(200);
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 70, 0, 0, 930));
  });

  it('replays a successful commit after the deadline instead of answering 410', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const r = await reserve(t, { ttl_ms: 1_000, grace_period_ms: 0 });
    const body = { idempotency_key: randomUUID(), actual: usd(30) };
    const first = await commit(t, r.body.reservation_id, body);

    clock.advanceTo(Number(r.body.expires_at_ms) + 200);
    const again = await commit(t, r.body.reservation_id, body);

    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect((await getReservation(t, r.body.reservation_id)).body.status).toBe('COMMITTED');
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 30, 0, 0, 970));
  });
});
