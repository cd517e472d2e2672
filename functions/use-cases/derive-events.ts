import { auditEvents } from '../domain/audit-events.js';
import { type BudgetRecord, type BudgetRef, budgetKey } from '../domain/budget.js';
import {
  type BudgetEvent,
  debtEvents,
  ledgerEvents,
  reachedEvents,
  refusalEvent,
  reservationEvents,
  takesBudget,
} from '../domain/budget-events.js';
import { budgetEventDocument } from '../domain/event-documents.js';
import type { EventDocument } from '../domain/events.js';
import type { TableChange } from '../store/stream.js';
import { readAsWritten } from './budget-reader.js';

/** What a batch of stream records meant: events per record, up to the first it could not read. */
export interface DerivedBatch {
  /** Index-aligned with the records given, up to `failedAt`. */
  readonly events: readonly (readonly EventDocument[])[];
  /** The first record whose events could not be derived (a read failed); it and the rest wait. */
  readonly failedAt?: number | undefined;
  readonly error?: unknown;
}

/**
 * The events of a batch of table changes, in stream order, as the protocol's documents: budget
 * state from ledger and reservation images and refusal records, lifecycle events from audit
 * records (domain/audit-events.ts). Unsharded budgets are decided from the images alone; a
 * write that took budget from a sharded one is decided on the whole budget, read at one instant
 * (once per budget per batch): the shards' images say nothing of the sum.
 */
export async function eventsOfChanges(changes: readonly TableChange[]): Promise<DerivedBatch> {
  const merged = new Map<string, Promise<BudgetRecord | undefined>>();
  const read = (ref: BudgetRef) => {
    const key = budgetKey(ref);
    let found = merged.get(key);
    if (!found) {
      found = readAsWritten(ref);
      merged.set(key, found);
    }
    return found;
  };
  const events: EventDocument[][] = [];
  for (const [i, change] of changes.entries()) {
    try {
      events.push(
        change.kind === 'audit'
          ? auditEvents(change.record)
          : (await eventsOf(change, read)).map(budgetEventDocument),
      );
    } catch (error) {
      return { events, failedAt: i, error };
    }
  }
  return { events };
}

type ReadBudget = (ref: BudgetRef) => Promise<BudgetRecord | undefined>;

async function eventsOf(change: TableChange, read: ReadBudget): Promise<BudgetEvent[]> {
  switch (change.kind) {
    case 'ledger': {
      if (change.shards <= 1) return ledgerEvents(change);
      // Shard 0 holds the whole budget's debt and overdraft limit, so its images tell debt
      // events exactly; usage needs the sum of the shards.
      const pressure =
        change.before !== undefined && takesBudget(change.before.counters, change.after.counters);
      return [
        ...(pressure ? shardedUsageEvents(await read(change.after.ref), change.at) : []),
        ...debtEvents(change),
      ];
    }
    case 'shard':
      return change.pressure ? shardedUsageEvents(await read(change.ref), change.at) : [];
    case 'closedPeriod':
      // A closed period's usage no longer matters; a late overage's debt does.
      return debtEvents(change);
    case 'reservation':
      return reservationEvents(change.before, change.after, change.at);
    case 'refusal':
      return [refusalEvent(change.refusal)];
    case 'audit':
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

function shardedUsageEvents(record: BudgetRecord | undefined, at: number): BudgetEvent[] {
  if (!record) return [];
  const fresh = reachedEvents(record.tenant, at, record.budget).filter((e) => !reported.has(e.id));
  for (const e of fresh) {
    reported.add(e.id);
    if (reported.size > REPORTED_MAX) reported.delete(reported.values().next().value ?? '');
  }
  return fresh;
}
