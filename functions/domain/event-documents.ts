import { balanceOf } from './budget.js';
import { type BudgetEvent, type BudgetState, utilizationOf } from './budget-events.js';
import { EVENT_SOURCE, type EventDocument } from './events.js';
import { sha256Hex } from './fingerprint.js';
import type { Action } from './reservation.js';

// Budget events as the protocol's Event documents (domain/events.ts): rendered once, by the
// stream consumer, then stored, listed and delivered as they are. Their JSON Schemas are
// outbound/schemas.ts (published in docs/events/; the unit tests hold these to them).

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The trace of an event no request's trace reaches (a ledger image, an expiry): one of its own,
 * derived from the event id so that a redelivered record gives the same.
 */
export const traceIdOfEvent = (eventId: string): string =>
  sha256Hex(`trace\u0000${eventId}`).slice(0, 32);

const actionOf = (a: Action) => ({
  kind: a.kind,
  name: a.name,
  ...(a.tags && { tags: [...a.tags] }),
});

/** The reference's EventDataBudgetThreshold of a budget as the event saw it. */
function usage(b: BudgetState) {
  const l = balanceOf(b);
  const utilization = utilizationOf(l);
  return {
    scope: l.scope,
    unit: l.unit,
    ...(utilization !== undefined && { utilization }),
    allocated: l.allocated,
    remaining: l.remaining,
    spent: l.spent,
    reserved: l.reserved,
    debt: l.debt,
    direction: 'rising' as const,
    ...(b.period && { period_start: iso(b.period.start), period_end: iso(b.period.end) }),
  };
}

/** The reference's EventDataBudgetOverLimit. */
function overLimit<T extends boolean>(b: BudgetState, isOver: T) {
  const { ref, counters, overdraftLimit: limit } = b;
  const ratio = limit > 0 && { debt_utilization: counters.debt / limit };
  return { ...ref, debt: counters.debt, overdraft_limit: limit, is_over_limit: isOver, ...ratio };
}

/** A budget's event: its envelope (category, the budget's scope) around its data. */
const budgetMessage = <B extends object, T extends string, D>(
  base: B,
  type: T,
  b: BudgetState,
  data: D,
) => ({ ...base, event_type: type, category: 'budget' as const, scope: b.ref.scope, data });

/** A budget event as the protocol's Event document, with a trace id always. */
export const budgetEventDocument = (e: BudgetEvent): EventDocument => {
  const message = budgetEventMessage(e);
  return { ...message, trace_id: message.trace_id ?? traceIdOfEvent(message.event_id) };
};

/** A budget event as the protocol's Event document (outbound/schemas.ts describes each type). */
export function budgetEventMessage(e: BudgetEvent): EventDocument {
  const base = {
    event_id: e.id,
    timestamp: iso(e.at),
    tenant_id: e.tenant,
    source: EVENT_SOURCE,
  } as const;
  switch (e.type) {
    case 'budget.threshold_crossed':
      return budgetMessage(base, e.type, e.budget, {
        ...usage(e.budget),
        threshold: e.threshold / 100,
        threshold_percent: e.threshold,
      });
    case 'budget.exhausted':
      return budgetMessage(base, e.type, e.budget, { ...usage(e.budget), threshold: 1 as const });
    case 'budget.debt_incurred': {
      const { ref, counters, overdraftLimit } = e.budget;
      const data = { ...ref, debt_incurred: e.incurred, total_debt: counters.debt };
      return budgetMessage(base, e.type, e.budget, { ...data, overdraft_limit: overdraftLimit });
    }
    case 'budget.over_limit_entered':
      return budgetMessage(base, e.type, e.budget, overLimit(e.budget, true as const));
    case 'budget.over_limit_exited':
      return budgetMessage(base, e.type, e.budget, overLimit(e.budget, false as const));
    case 'reservation.commit_overage': {
      const r = e.reservation;
      return {
        ...base,
        event_type: e.type,
        category: 'reservation',
        scope: r.scopePath,
        data: {
          reservation_id: r.reservationId,
          scope: r.scopePath,
          unit: r.reserved.unit,
          estimated_amount: r.reserved.amount,
          actual_amount: e.actual,
          overage: e.actual - r.reserved.amount,
          overage_policy: r.overagePolicy,
        },
      };
    }
    case 'reservation.expired': {
      const r = e.reservation;
      return {
        ...base,
        event_type: e.type,
        category: 'reservation',
        scope: r.scopePath,
        actor: { type: 'system' },
        data: {
          reservation_id: r.reservationId,
          scope: r.scopePath,
          unit: r.reserved.unit,
          estimated_amount: r.reserved.amount,
          created_at: iso(r.createdAtMs),
          expired_at: iso(r.expiresAtMs),
          ttl_ms: Math.max(0, r.expiresAtMs - r.createdAtMs),
          ...(r.finalizedAtMs !== undefined && { finalized_at: iso(r.finalizedAtMs) }),
          subject: { ...r.subject },
          action: actionOf(r.action),
        },
      };
    }
    case 'reservation.denied': {
      const r = e.refusal;
      return {
        ...base,
        event_type: e.type,
        category: 'reservation',
        scope: r.scope,
        ...(r.keyId !== undefined && { actor: { type: 'api_key', key_id: r.keyId } }),
        ...(r.requestId !== undefined && { request_id: r.requestId }),
        ...(r.traceId !== undefined && { trace_id: r.traceId }),
        data: {
          scope: r.scope,
          unit: r.unit,
          reason_code: r.code,
          requested_amount: r.requested,
          remaining: r.remaining,
          action: actionOf(r.action),
          subject: { ...r.subject },
          ...(r.suppressed > 0 && { suppressed_count: r.suppressed }),
        },
      };
    }
  }
}
