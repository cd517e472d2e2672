import {
  type Budget,
  type Budgets,
  budgetsByKey,
  countersOf,
  type Ledger,
  SINGLE,
} from '../../functions/domain/budget.js';
import type { Reservation } from '../../functions/domain/reservation.js';
import { reservationIdOf } from '../../functions/domain/reservation-id.js';
import type { UsageEvent } from '../../functions/domain/settlement.js';

/** A budget with this balance: unsharded and ACTIVE unless `extra` says otherwise. */
export const budgetOf = (l: Ledger, extra: Partial<Budget> = {}): Budget => ({
  ref: { scope: l.scope, unit: l.unit },
  counters: countersOf(l),
  status: 'ACTIVE',
  overdraftLimit: l.overdraftLimit,
  layout: SINGLE,
  ...extra,
});

/** Budgets of these balances (or budgets), by budgetKey, as a read hands them over. */
export const budgetsOf = (...list: readonly (Ledger | Budget)[]): Budgets =>
  budgetsByKey(list.map((b) => ('ref' in b ? b : budgetOf(b))));

/**
 * An ACTIVE reservation of 10 TOKENS on `scopes` (its tenant's root first, every hold on shard
 * 0), created at 1 000 for 60 s with 5 s of grace; `overrides` say what a test needs otherwise.
 */
export const aReservation = (
  scopes: readonly string[],
  overrides: Partial<Reservation> = {},
): Reservation => {
  const r = aReservationOf(scopes, overrides);
  // Its id as the store gives it back: the key and the hint naming its budgets.
  const id = reservationIdOf('rsv_1', r.tenant, scopes.at(-1) ?? '', r.reserved.unit);
  return { reservationId: id, ...r };
};

const aReservationOf = (
  scopes: readonly string[],
  overrides: Partial<Reservation>,
): Omit<Reservation, 'reservationId'> & Partial<Reservation> => ({
  tenant: (scopes[0] ?? 'tenant:t').slice('tenant:'.length),
  status: 'ACTIVE',
  idempotencyKey: 'k',
  subject: {},
  action: { kind: 'llm', name: 'm' },
  reserved: { unit: 'TOKENS', amount: 10 },
  createdAtMs: 1_000,
  expiresAtMs: 61_000,
  gracePeriodMs: 5_000,
  scopePath: scopes.at(-1) ?? '',
  holds: scopes.map((scope) => ({ scope, shard: 0 })),
  overagePolicy: 'REJECT',
  ttlMs: 60_000,
  ...overrides,
});

/** A usage event of 5 TOKENS on `scopes` (its tenant's root first), at 1 000. */
export const anEvent = (
  scopes: readonly string[],
  overrides: Partial<UsageEvent> = {},
): UsageEvent => ({
  eventId: 'evt_1',
  tenant: (scopes[0] ?? 'tenant:t').slice('tenant:'.length),
  createdAtMs: 1_000,
  subject: { workspace: 'w' },
  action: { kind: 'llm', name: 'm' },
  actual: { unit: 'TOKENS', amount: 5 },
  scopes,
  overagePolicy: 'REJECT',
  ...overrides,
});

/** A TOKENS balance at `scope`: 1,000 allocated and nothing else unless `fields` say so. */
export const tokensLedger = (scope: string, fields: Partial<Ledger> = {}): Ledger => {
  const l = { allocated: 1_000, spent: 0, reserved: 0, debt: 0, overdraftLimit: 0, ...fields };
  return { scope, unit: 'TOKENS', ...l, remaining: l.allocated - l.spent - l.reserved - l.debt };
};
