import type { Unit } from '../../domain/amounts.js';
import { exactJson, parseExactJson } from '../../domain/json.js';
import type { UsageEvent } from '../../domain/settlement.js';
import { and, attr, type Item, type TransactItem, totalAsRead, update } from '../expressions.js';
import { keys } from '../keys.js';
import { type OutcomeToStore, outcomeAttributes } from './outcome.js';

// The usage event family (POST /v1/events): one item per event, keyed by its id (derived from
// tenant and idempotency key, so it is also the event's idempotency record).

/** Written on every event item from this version on (absent: written before). */
export const EVENT_VERSION = 1;

export const isEventItem = (item: Item | undefined): item is Item => item?.type === 'event';

export function eventItem(e: UsageEvent, outcome: OutcomeToStore): Item {
  const record: Item = {
    ...keys.event(e.eventId),
    type: 'event',
    v: EVENT_VERSION,
    event_id: e.eventId,
    tenant: e.tenant,
    created_at_ms: e.createdAtMs,
    subject: e.subject,
    action: e.action,
    unit: e.actual.unit,
    actual: e.actual.amount,
    scopes: e.scopes,
    overage_policy: e.overagePolicy,
    // As JSON text: exact numbers and any keys survive (DynamoDB maps would refuse them).
    ...(e.metrics !== undefined && { metrics_json: exactJson(e.metrics) }),
    ...(e.metadata !== undefined && { metadata_json: exactJson(e.metadata) }),
    client_time_ms: e.clientTimeMs,
    // The debt the charge ran up on each scope, only if any (a refund returns it first).
    ...(e.debtIncurred &&
      Object.keys(e.debtIncurred).length > 0 && {
        charge_debt: e.scopes.map((s) => e.debtIncurred?.[s] ?? 0),
      }),
  };
  return { ...record, ...outcomeAttributes(outcome, { scopes: e.scopes, unit: e.actual.unit }) };
}

/** What refunds gave back so far, conditioned on what they had given back when read. */
export function eventRefundUpdate(e: UsageEvent, refunded: number): TransactItem {
  return update(
    keys.event(e.eventId),
    { set: { refunded } },
    {
      condition: and(attr('type').eq('event'), totalAsRead('refunded', e.refunded?.amount ?? 0)),
      returnOld: true,
    },
  );
}

const jsonOf = (text: unknown) =>
  typeof text === 'string'
    ? (parseExactJson(text)?.value as Record<string, unknown> | undefined)
    : undefined;

export function eventOf(stored: Item): UsageEvent {
  const item = stored.v === undefined ? eventOfUnversioned(stored) : stored;
  return {
    eventId: String(item.event_id),
    tenant: String(item.tenant),
    createdAtMs: Number(item.created_at_ms),
    subject: item.subject as UsageEvent['subject'],
    action: item.action as UsageEvent['action'],
    actual: { unit: item.unit as Unit, amount: Number(item.actual) },
    scopes: item.scopes as string[],
    overagePolicy: item.overage_policy as UsageEvent['overagePolicy'],
    metrics: jsonOf(item.metrics_json),
    metadata: jsonOf(item.metadata_json),
    clientTimeMs: item.client_time_ms === undefined ? undefined : Number(item.client_time_ms),
    ...(Array.isArray(item.charge_debt) && {
      debtIncurred: debtsByScope(item.scopes as string[], item.charge_debt.map(Number)),
    }),
    ...(item.refunded !== undefined && {
      refunded: { unit: item.unit as Unit, amount: Number(item.refunded) },
    }),
  };
}

const debtsByScope = (scopes: readonly string[], debts: readonly number[]) =>
  Object.fromEntries(scopes.flatMap((s, i) => ((debts[i] ?? 0) > 0 ? [[s, debts[i] ?? 0]] : [])));

/**
 * Event items written before items carried `v`: 0.2 on, the current form; 0.1's kept `metrics`
 * and `metadata` as DynamoDB maps (now JSON text). Their stored outcomes are
 * store/entities/outcome.ts's. Delete once no event item without `v` remains: events are kept
 * for good, so only after a backfill has rewritten them.
 */
function eventOfUnversioned(item: Item): Item {
  const { metrics, metadata, ...rest } = item;
  return {
    ...rest,
    ...(item.metrics_json === undefined &&
      metrics !== undefined && { metrics_json: exactJson(metrics) }),
    ...(item.metadata_json === undefined &&
      metadata !== undefined && { metadata_json: exactJson(metadata) }),
  };
}
