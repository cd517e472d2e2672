import { LosslessNumber } from 'lossless-json';
import { RATIO_BOUNDS_PERCENT } from '../domain/accuracy.js';
import type { Amount, Unit } from '../domain/amounts.js';
import type { Charge, Reservation } from '../domain/reservation.js';
import { type Charged, type ChargeListing, holdingNow } from '../use-cases/charges.js';
import type { DelegationListing } from '../use-cases/delegations.js';
import type { EstimateAccuracy, KindAccuracy } from '../use-cases/estimate-accuracy.js';
import type { Refunded } from '../use-cases/refunds.js';
import { balanceView, pageTail } from './views.js';

// The answers of our extensions (x-extension budget-reservations): charges, refunds, estimate
// accuracy. Like views.ts: wire JSON from domain results, optional fields omitted, never null.

const amountView = (a: Amount) => ({ unit: a.unit, amount: a.amount });

export const chargedView = (c: Charged) => ({
  charge_id: c.chargeId,
  reservation_id: c.reservationId,
  sequence: c.sequence,
  amount: amountView(c.amount),
  charged_total: amountView(c.chargedTotal),
  held: amountView(c.held),
  balances: c.balances.map(balanceView),
});

const chargeView = (c: Charge) => ({
  charge_id: c.chargeId,
  sequence: c.sequence,
  amount: amountView(c.amount),
  created_at_ms: c.createdAtMs,
  ...(c.metrics !== undefined && { metrics: c.metrics }),
  ...(c.metadata !== undefined && { metadata: c.metadata }),
});

export const chargeListView = ({ reservation: r, page }: ChargeListing) => {
  const { unit } = r.reserved;
  return {
    reservation_id: r.reservationId,
    status: r.status,
    charged_total: { unit, amount: r.charges?.total.amount ?? 0 },
    held: amountView(holdingNow(r)),
    refunded_total: { unit, amount: r.refunded?.amount ?? 0 },
    charges: page.items.map(chargeView),
    ...pageTail(page),
  };
};

const delegationView = (r: Reservation) => {
  const { unit } = r.reserved;
  const charged = r.committed?.amount ?? r.charges?.total.amount ?? 0;
  return {
    reservation_id: r.reservationId,
    status: r.status,
    depth: r.delegation?.depth ?? 0,
    reserved: amountView(r.reserved),
    held: amountView(holdingNow(r)),
    charged: { unit, amount: charged },
    scope_path: r.scopePath,
    created_at_ms: r.createdAtMs,
    expires_at_ms: r.expiresAtMs,
    active_delegations: r.activeChildren?.length ?? 0,
  };
};

export const delegationListView = ({ reservation: r, page }: DelegationListing) => ({
  reservation_id: r.reservationId,
  status: r.status,
  held: amountView(holdingNow(r)),
  delegations: page.items.map(delegationView),
  ...pageTail(page),
});

export const refundedView = (r: Refunded) => ({
  ...(r.of.kind === 'reservation' ? { reservation_id: r.of.id } : { event_id: r.of.id }),
  refund_id: r.refundId,
  amount: amountView(r.amount),
  refunded_total: amountView(r.refundedTotal),
  refundable: amountView(r.refundable),
  balances: r.balances.map(balanceView),
});

/** Sums are exact: beyond 2^53 they are written as exact JSON integers, never rounded. */
const exact = (n: bigint): number => {
  if (n <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(n);
  // A LosslessNumber is written digit for digit by the response's exactJson.
  return new LosslessNumber(n.toString()) as unknown as number;
};

function figuresView(unit: Unit, { totals: t, suggestion }: KindAccuracy) {
  return {
    settled: t.settled,
    estimate_total: { unit, amount: exact(t.estimate) },
    actual_total: { unit, amount: exact(t.actual) },
    ...(t.estimate > 0n && { actual_to_estimate: Number(t.actual) / Number(t.estimate) }),
    histogram: [...t.histogram],
    ...(suggestion && {
      coverage_95_ratio: suggestion.ratioPercent / 100,
      suggested_estimate: { unit, amount: exact(suggestion.estimate) },
    }),
    held_unspent_unit_seconds: Number(t.idleUnitMs) / 1000,
    released: t.released,
    expired: t.expired,
    ...(t.lastAtMs > 0 && { last_settled_at: new Date(t.lastAtMs).toISOString() }),
  };
}

export const accuracyView = (a: EstimateAccuracy) => {
  const { unit } = a.ref;
  return {
    scope: a.ref.scope,
    unit,
    ratio_bounds: RATIO_BOUNDS_PERCENT.map((p) => p / 100),
    kinds: [...a.kinds]
      .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
      .map(([kind, figures]) => ({ kind, ...figuresView(unit, figures) })),
    other: figuresView(unit, a.other),
    total: figuresView(unit, a.total),
  };
};
