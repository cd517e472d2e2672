import type { Unit } from '../domain/amounts.js';
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

/** A budget's event: its envelope (category, the budget's scope) around its data. */
const budgetMessage = <B extends object, T extends string, D>(
  base: B,
  type: T,
  b: BudgetState,
  data: D,
) => ({ ...base, event_type: type, category: 'budget' as const, scope: b.ref.scope, data });

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
    case 'budget.over_limit_entered': {
      const { ref, counters, overdraftLimit: limit } = e.budget;
      const over = { is_over_limit: true as const };
      const ratio = limit > 0 && { debt_utilization: counters.debt / limit };
      const data = { ...ref, debt: counters.debt, overdraft_limit: limit, ...over, ...ratio };
      return budgetMessage(base, e.type, e.budget, data);
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
    case 'custom.refund': {
      const r = e.audit;
      const d = r.detail ?? {};
      const scopes = Array.isArray(d.scopes) ? d.scopes.map(String) : [];
      return {
        ...base,
        event_type: e.type,
        category: 'budget',
        ...(scopes.length > 0 && { scope: scopes[scopes.length - 1] }),
        actor: r.actor === 'admin' ? { type: 'admin' } : { type: 'api_key', key_id: r.actor },
        request_id: r.requestId,
        data: {
          refund_id: String(d.refund_id ?? ''),
          ...(r.resourceType === 'event'
            ? { event_id: r.resourceId }
            : { reservation_id: r.resourceId }),
          unit: String(d.unit) as Unit,
          amount: Number(d.amount),
          refunded_total: Number(d.refunded_total),
          charged: Number(d.charged),
          reason: String(d.reason ?? ''),
          scopes,
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
