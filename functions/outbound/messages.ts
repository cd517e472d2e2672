import { balanceOf } from '../domain/budget.js';
import {
  type BudgetEvent,
  type BudgetState,
  EVENT_SOURCE,
  utilizationOf,
} from '../domain/budget-events.js';
import type { Action } from '../domain/reservation.js';
import type { BudgetEventMessage } from './schemas.js';

const iso = (ms: number) => new Date(ms).toISOString();

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

/** A domain event as the wire carries it (functions/outbound/schemas.ts). */
export function budgetEventMessage(e: BudgetEvent): BudgetEventMessage {
  const base = {
    event_id: e.id,
    timestamp: iso(e.at),
    tenant_id: e.tenant,
    source: EVENT_SOURCE,
  } as const;
  switch (e.type) {
    case 'budget.threshold_crossed':
      return {
        ...base,
        event_type: e.type,
        category: 'budget',
        scope: e.budget.ref.scope,
        data: { ...usage(e.budget), threshold: e.threshold / 100, threshold_percent: e.threshold },
      };
    case 'budget.exhausted':
      return {
        ...base,
        event_type: e.type,
        category: 'budget',
        scope: e.budget.ref.scope,
        data: { ...usage(e.budget), threshold: 1 },
      };
    case 'budget.debt_incurred': {
      const l = balanceOf(e.budget);
      return {
        ...base,
        event_type: e.type,
        category: 'budget',
        scope: l.scope,
        data: {
          scope: l.scope,
          unit: l.unit,
          debt_incurred: e.incurred,
          total_debt: l.debt,
          overdraft_limit: l.overdraftLimit,
        },
      };
    }
    case 'budget.over_limit_entered': {
      const l = balanceOf(e.budget);
      return {
        ...base,
        event_type: e.type,
        category: 'budget',
        scope: l.scope,
        data: {
          scope: l.scope,
          unit: l.unit,
          debt: l.debt,
          overdraft_limit: l.overdraftLimit,
          is_over_limit: true,
          ...(l.overdraftLimit > 0 && { debt_utilization: l.debt / l.overdraftLimit }),
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
