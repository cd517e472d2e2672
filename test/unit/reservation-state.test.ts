import { describe, expect, it } from 'vitest';
import {
  expiryChanges,
  isEffectivelyExpired,
  type Reservation,
  type ReservationStatus,
  settleDeadline,
  type Transition,
  type Trigger,
  transition,
} from '../../functions/domain/reservation.js';

// A reservation created at 1 000 with ttl 10 000 and grace 2 000:
// extend is possible before 11 000, commit and release before 13 000.
const CREATED = 1_000;
const EXPIRES = 11_000;
const GRACE = 2_000;
const DEADLINE = EXPIRES + GRACE;

function reservation(status: ReservationStatus, overrides: Partial<Reservation> = {}): Reservation {
  return {
    reservationId: 'rsv_1',
    tenant: 'acme',
    status,
    idempotencyKey: 'k1',
    subject: { workspace: 'w' },
    action: { kind: 'llm', name: 'model-x' },
    reserved: { unit: 'TOKENS', amount: 100 },
    createdAtMs: CREATED,
    expiresAtMs: EXPIRES,
    gracePeriodMs: GRACE,
    scopePath: 'tenant:acme/workspace:w',
    holds: [
      { scope: 'tenant:acme', shard: 0 },
      { scope: 'tenant:acme/workspace:w', shard: 0 },
    ],
    overagePolicy: 'REJECT',
    ttlMs: EXPIRES - CREATED,
    ...overrides,
  };
}

/** The outcome in a comparable form: target status, 'expireThenRefuse', or the refusal code. */
function outcome(t: Transition): string {
  switch (t.kind) {
    case 'to':
      return t.status;
    case 'expireThenRefuse':
      return 'expireThenRefuse';
    case 'refuse':
      return `refuse ${t.error.code}`;
  }
}

describe('transition: ACTIVE (SPEC § States and transitions)', () => {
  it.each<[Trigger, number, string]>([
    // ACTIVE | extend | before TTL expiry (no grace period) | ACTIVE
    ['extend', CREATED, 'ACTIVE'],
    ['extend', EXPIRES - 1, 'ACTIVE'],
    // EXPIRED or past TTL | extend | 410, unchanged — from expires_at_ms on, grace does not count
    ['extend', EXPIRES, 'refuse RESERVATION_EXPIRED'],
    ['extend', EXPIRES + 1, 'refuse RESERVATION_EXPIRED'],
    ['extend', DEADLINE - 1, 'refuse RESERVATION_EXPIRED'],
    // ACTIVE | commit | within TTL plus grace period | COMMITTED
    ['commit', CREATED, 'COMMITTED'],
    ['commit', EXPIRES, 'COMMITTED'],
    ['commit', DEADLINE - 1, 'COMMITTED'],
    // ACTIVE | release | within TTL plus grace period | RELEASED
    ['release', CREATED, 'RELEASED'],
    ['release', EXPIRES, 'RELEASED'],
    ['release', DEADLINE - 1, 'RELEASED'],
    // ACTIVE | TTL plus grace period elapsed | server expiry | EXPIRED
    ['expire', DEADLINE, 'EXPIRED'],
    ['expire', DEADLINE + 60_000, 'EXPIRED'],
  ])('%s at %i → %s', (trigger, now, expected) => {
    const r = reservation('ACTIVE');

    const t = transition(r, trigger, now);

    expect(outcome(t)).toBe(expected);
  });

  it.each<Trigger>(['commit', 'release', 'extend'])(
    '%s once TTL plus grace has elapsed (now == deadline) finalizes as EXPIRED, then answers 410',
    (trigger) => {
      const r = reservation('ACTIVE');

      const atDeadline = transition(r, trigger, DEADLINE);
      const later = transition(r, trigger, DEADLINE + 1);

      expect(outcome(atDeadline)).toBe('expireThenRefuse');
      expect(outcome(later)).toBe('expireThenRefuse');
    },
  );

  it('never lets the sweeper expire a reservation before its deadline', () => {
    const r = reservation('ACTIVE');

    const early = transition(r, 'expire', DEADLINE - 1);

    expect(early.kind).toBe('refuse');
  });

  it('with grace 0 ends commit and release at expires_at_ms', () => {
    const r = reservation('ACTIVE', { gracePeriodMs: 0 });

    expect(outcome(transition(r, 'commit', EXPIRES - 1))).toBe('COMMITTED');
    expect(outcome(transition(r, 'commit', EXPIRES))).toBe('expireThenRefuse');
    expect(outcome(transition(r, 'release', EXPIRES))).toBe('expireThenRefuse');
    expect(outcome(transition(r, 'expire', EXPIRES))).toBe('EXPIRED');
  });

  it('puts the deadline at expires_at_ms + grace_period_ms', () => {
    expect(settleDeadline(reservation('ACTIVE'))).toBe(DEADLINE);
  });
});

describe('transition: finalized reservations', () => {
  // COMMITTED or RELEASED | commit, release or extend | any | unchanged | 409 RESERVATION_FINALIZED
  it.each<[ReservationStatus, Trigger, number]>(
    (['COMMITTED', 'RELEASED'] as const).flatMap((status) =>
      (['commit', 'release', 'extend'] as const).flatMap((trigger) =>
        [CREATED, EXPIRES, DEADLINE, DEADLINE + 1].map(
          (now): [ReservationStatus, Trigger, number] => [status, trigger, now],
        ),
      ),
    ),
  )('%s + %s at %i → 409 RESERVATION_FINALIZED', (status, trigger, now) => {
    const r = reservation(status, { finalizedAtMs: CREATED + 1 });

    const t = transition(r, trigger, now);

    expect(outcome(t)).toBe('refuse RESERVATION_FINALIZED');
  });

  // EXPIRED | commit, release | any | unchanged | 410; EXPIRED | extend | any | unchanged | 410
  it.each<[Trigger, number]>(
    (['commit', 'release', 'extend'] as const).flatMap((trigger) =>
      [CREATED, EXPIRES, DEADLINE, DEADLINE + 1].map((now): [Trigger, number] => [trigger, now]),
    ),
  )('EXPIRED + %s at %i → 410 RESERVATION_EXPIRED', (trigger, now) => {
    const r = reservation('EXPIRED', { finalizedAtMs: DEADLINE });

    const t = transition(r, trigger, now);

    expect(outcome(t)).toBe('refuse RESERVATION_EXPIRED');
  });

  it.each<ReservationStatus>(['COMMITTED', 'RELEASED', 'EXPIRED'])(
    'never expires a reservation that is already %s',
    (status) => {
      const r = reservation(status, { finalizedAtMs: CREATED + 1 });

      const t = transition(r, 'expire', DEADLINE + 1);

      expect(t.kind).toBe('refuse');
    },
  );

  it('carries the reservation id and status in the refusal details', () => {
    const r = reservation('COMMITTED', { finalizedAtMs: CREATED + 1 });

    const t = transition(r, 'commit', CREATED + 2);

    expect(t.kind === 'refuse' && t.error.details).toMatchObject({
      reservation_id: 'rsv_1',
      status: 'COMMITTED',
    });
  });
});

describe('isEffectivelyExpired (reads and settles)', () => {
  it.each<[ReservationStatus, number, boolean]>([
    ['ACTIVE', DEADLINE - 1, false],
    ['ACTIVE', DEADLINE, true],
    ['EXPIRED', CREATED, true],
    ['COMMITTED', DEADLINE + 1, false],
    ['RELEASED', DEADLINE + 1, false],
  ])('%s at %i → %s', (status, now, expected) => {
    expect(isEffectivelyExpired(reservation(status), now)).toBe(expected);
  });
});

describe('expiryChanges (the sweeper transition)', () => {
  it('returns the whole hold to every scope once the deadline has passed', () => {
    const changes = expiryChanges(reservation('ACTIVE'), DEADLINE);

    expect(changes).toEqual([
      {
        scope: 'tenant:acme',
        unit: 'TOKENS',
        delta: { reserved: -100, remaining: 100 },
        guard: { kind: 'exists' },
        shard: 0,
      },
      {
        scope: 'tenant:acme/workspace:w',
        unit: 'TOKENS',
        delta: { reserved: -100, remaining: 100 },
        guard: { kind: 'exists' },
        shard: 0,
      },
    ]);
  });

  it('expires nothing before the deadline, nor anything already final', () => {
    expect(expiryChanges(reservation('ACTIVE'), DEADLINE - 1)).toBeUndefined();
    expect(expiryChanges(reservation('COMMITTED'), DEADLINE + 1)).toBeUndefined();
    expect(expiryChanges(reservation('EXPIRED'), DEADLINE + 1)).toBeUndefined();
  });
});
