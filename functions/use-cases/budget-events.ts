import { randomUUID } from 'node:crypto';
import { config } from '../config/settings.js';
import type { Unit } from '../domain/amounts.js';
import { budgetKey } from '../domain/budget.js';
import {
  type BudgetEvent,
  type BudgetState,
  debtEvents,
  ledgerEvents,
  type Refusal,
  reachedEvents,
  refusalEvent,
  reservationEvents,
} from '../domain/budget-events.js';
import type { Caller } from '../domain/caller.js';
import { isRefusal, type RefusalCode } from '../domain/ledger.js';
import type { Action } from '../domain/reservation.js';
import type { Subject } from '../domain/scopes.js';
import { log } from '../log.js';
import { type BudgetRecord, getBudgetRecords } from '../store/ledgers.js';
import { insertRefusal } from '../store/refusals.js';
import type { TableChange } from '../store/stream.js';

/** What a batch of stream records meant: events per record, up to the first it could not read. */
export interface DerivedBatch {
  /** Index-aligned with the records given, up to `failedAt`. */
  readonly events: readonly (readonly BudgetEvent[])[];
  /** The first record whose events could not be derived (a read failed); it and the rest wait. */
  readonly failedAt?: number | undefined;
  readonly error?: unknown;
}

/**
 * The events of a batch of table changes, in stream order. Unsharded budgets are decided from
 * the images alone; a write that took budget from a sharded one is decided on the whole budget,
 * read at one instant (once per budget per batch): the shards' images say nothing of the sum.
 */
export async function budgetEventsOf(changes: readonly TableChange[]): Promise<DerivedBatch> {
  const merged = new Map<string, Promise<BudgetRecord | undefined>>();
  const read = (scope: string, unit: Unit) => {
    const key = budgetKey({ scope, unit });
    let found = merged.get(key);
    if (!found) {
      found = getBudgetRecords([{ scope, unit }], true).then(([b]) => b);
      merged.set(key, found);
    }
    return found;
  };
  const events: BudgetEvent[][] = [];
  for (const [i, change] of changes.entries()) {
    try {
      events.push(await eventsOf(change, read));
    } catch (error) {
      return { events, failedAt: i, error };
    }
  }
  return { events };
}

type ReadBudget = (scope: string, unit: Unit) => Promise<BudgetRecord | undefined>;

async function eventsOf(change: TableChange, read: ReadBudget): Promise<BudgetEvent[]> {
  switch (change.kind) {
    case 'ledger': {
      if (change.shards <= 1) return ledgerEvents(change);
      // Shard 0 holds the whole budget's debt and overdraft limit, so its images tell debt
      // events exactly; usage needs the sum of the shards.
      const { scope, unit } = change.after.ledger;
      const pressure =
        change.before !== undefined &&
        (change.after.ledger.remaining < change.before.ledger.remaining ||
          change.after.ledger.spent + change.after.ledger.reserved >
            change.before.ledger.spent + change.before.ledger.reserved);
      return [
        ...(pressure ? await shardedUsageEvents(await read(scope, unit), change.at) : []),
        ...debtEvents(change),
      ];
    }
    case 'shard':
      return change.pressure
        ? shardedUsageEvents(await read(change.scope, change.unit), change.at)
        : [];
    case 'closedPeriod':
      // A closed period's usage no longer matters; a late overage's debt does.
      return debtEvents(change);
    case 'reservation':
      return reservationEvents(change.before, change.after, change.at);
    case 'refusal':
      return [refusalEvent(change.refusal)];
    case 'other':
      return [];
  }
}

/**
 * Crossing ids this process has reported for sharded budgets, oldest first: several shard
 * writes of one batch (or of consecutive batches) see the same crossing. Another process, or
 * this one after a restart, may report a crossing again: with the same id.
 */
const reported = new Set<string>();
const REPORTED_MAX = 10_000;

function shardedUsageEvents(budget: BudgetRecord | undefined, at: number): BudgetEvent[] {
  if (!budget) return [];
  const state: BudgetState = {
    ledger: budget.ledger,
    thresholds: budget.thresholds,
    ...(budget.period && { period: { start: budget.period.start, end: budget.period.end } }),
  };
  const fresh = reachedEvents(budget.tenant, at, state).filter((e) => !reported.has(e.id));
  for (const e of fresh) {
    reported.add(e.id);
    if (reported.size > REPORTED_MAX) reported.delete(reported.values().next().value ?? '');
  }
  return fresh;
}

// ---- refusals (the request path) -----------------------------------------------------------

/** The refusal's last record per (tenant, scope, unit, code) in this process, for sampling. */
const lastRefusal = new Map<string, { atMs: number; suppressed: number }>();
const REFUSAL_KEYS_MAX = 10_000;

export interface RefusedRequest {
  readonly subject: Subject;
  readonly action: Action;
  readonly estimate: { readonly unit: Unit; readonly amount: number };
}

/**
 * Records a refused live reservation for the stream to report (reservation.denied), then lets
 * the refusal go on its way. Never fails the request: the record is best effort, one small
 * PutItem on the refusal path only. At most one record per (tenant, scope, unit, code) per
 * REFUSAL_EVENT_INTERVAL_MS in this process; the refusals in between are counted on the next
 * record (`suppressed`), so an agent hammering a refused budget costs one write a second.
 */
export async function recordRefusal(
  error: unknown,
  caller: Caller,
  request: RefusedRequest,
  now: number,
  requestId?: string,
): Promise<void> {
  if (!config.REFUSAL_EVENTS || !isRefusal(error)) return;
  const d = error.details ?? {};
  const scope = typeof d.scope === 'string' ? d.scope : '';
  const unit = (typeof d.unit === 'string' ? d.unit : request.estimate.unit) as Unit;
  const key = `${caller.tenant}\u0000${scope}\u0000${unit}\u0000${error.code}`;
  const last = lastRefusal.get(key);
  if (last && now - last.atMs < config.REFUSAL_EVENT_INTERVAL_MS && now >= last.atMs) {
    last.suppressed++;
    return;
  }
  lastRefusal.delete(key);
  if (lastRefusal.size >= REFUSAL_KEYS_MAX) lastRefusal.clear();
  lastRefusal.set(key, { atMs: now, suppressed: 0 });
  const refusal: Refusal = {
    refusalId: `ref_${randomUUID().replaceAll('-', '')}`,
    tenant: caller.tenant,
    atMs: now,
    code: error.code as RefusalCode,
    scope,
    unit,
    requested: Number(d.requested ?? request.estimate.amount),
    remaining: Number(d.remaining ?? 0),
    subject: request.subject,
    action: request.action,
    keyId: caller.keyId,
    requestId,
    suppressed: last?.suppressed ?? 0,
  };
  try {
    await insertRefusal(refusal);
  } catch (failure) {
    log.warn('refusal not recorded: no reservation.denied event for it', {
      error: failure,
      tenant: caller.tenant,
      reason_code: error.code,
    });
  }
}
