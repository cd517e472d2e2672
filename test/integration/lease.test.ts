import { describe, expect, it } from 'vitest';
import { testClock } from '../helpers/clock.js';
import { givenTenantWith, reserveBody, usd } from '../helpers/fixtures.js';
import { reservationsApi, withoutLease } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// remaining_ttl_ms (the reference's volatile lease observation; the SDK schedules its
// heartbeat from it): on server time, so the clock stands still between the moves a test makes.
const clock = testClock({ frozen: true });
const stack = useTestStack({ clock });
const { create, reserve, commit, release, extend } = reservationsApi(stack);

describe('remaining_ttl_ms', () => {
  it('is the TTL on a new reservation, recomputed on a replay, and 0 once it is settled', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
    const body = reserveBody({ estimate: usd(100), ttl_ms: 30_000 });

    const first = await create(t, body);
    clock.advance(12_000);
    const later = await create(t, body);
    await commit(t, first.body.reservation_id, { actual: usd(80) });
    const settled = await create(t, body);

    expect(first.body.remaining_ttl_ms).toBe(30_000);
    expect(later.body.remaining_ttl_ms).toBe(18_000);
    expect(settled.body.remaining_ttl_ms).toBe(0);
    // Everything else replays verbatim.
    expect(withoutLease(later.body)).toEqual(withoutLease(first.body));
    expect(withoutLease(settled.body)).toEqual(withoutLease(first.body));
  });

  it('is absent on a dry run, which holds nothing', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });

    const allow = await reserve(t, { dry_run: true });
    const deny = await reserve(t, { dry_run: true, estimate: usd(20_000) });

    expect(allow.body.decision).toBe('ALLOW');
    expect(deny.body.decision).toBe('DENY');
    expect(allow.body).not.toHaveProperty('remaining_ttl_ms');
    expect(deny.body).not.toHaveProperty('remaining_ttl_ms');
  });

  it('is the time to the new expiry on an extend, recomputed on its replay, 0 once released', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
    const r = await reserve(t, { ttl_ms: 10_000 });
    clock.advance(4_000);
    const key = 'extend-once';

    const first = await extend(t, r.body.reservation_id, {
      idempotency_key: key,
      extend_by_ms: 5_000,
    });
    clock.advance(3_000);
    const replay = await extend(t, r.body.reservation_id, {
      idempotency_key: key,
      extend_by_ms: 5_000,
    });
    await release(t, r.body.reservation_id);
    const afterRelease = await extend(t, r.body.reservation_id, {
      idempotency_key: key,
      extend_by_ms: 5_000,
    });

    // Expiry moves from +10 s to +15 s after creation; the extend came at +4 s.
    expect(first.body.remaining_ttl_ms).toBe(11_000);
    expect(replay.body.remaining_ttl_ms).toBe(8_000);
    expect(afterRelease.status).toBe(200);
    expect(afterRelease.body.remaining_ttl_ms).toBe(0);
    expect(withoutLease(replay.body)).toEqual(withoutLease(first.body));
  });
});
