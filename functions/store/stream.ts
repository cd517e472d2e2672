import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import type { Unit } from '../domain/amounts.js';
import type { AuditRecord } from '../domain/audit.js';
import type { BudgetRef } from '../domain/budget.js';
import { type BudgetState, type Refusal, takesBudget } from '../domain/budget-events.js';
import type { Reservation } from '../domain/reservation.js';
import { auditRecordOf } from './entities/audit.js';
import { budgetOfItem, countersOf, shardCountOf } from './entities/ledger.js';
import { refusalOf } from './entities/refusal.js';
import { isReservationItem, reservationOf } from './entities/reservation.js';
import type { Item } from './expressions.js';

/**
 * One record of the table's stream (NEW_AND_OLD_IMAGES), decoded into domain values: the only
 * place that knows which items the stream carries and what their images hold.
 */
interface RecordBase {
  /** The stream record's eventID: the same when the record is delivered again. */
  readonly recordId: string;
  /** ApproximateCreationDateTime, epoch ms. */
  readonly at: number;
}

export type TableChange = RecordBase &
  (
    | {
        /** A budget's ledger item: the whole budget, or shard 0 of a sharded one (`shards` > 1). */
        readonly kind: 'ledger';
        readonly tenant: string;
        readonly shards: number;
        readonly before?: BudgetState | undefined;
        readonly after: BudgetState;
      }
    | {
        /**
         * Shard k ≥ 1 of a sharded budget; `pressure`: the write took budget from this shard
         * (its remaining went down, or its usage up), so the budget may have crossed something.
         */
        readonly kind: 'shard';
        readonly ref: BudgetRef;
        readonly pressure: boolean;
      }
    | {
        /** The ledger of a rolling budget's closed period (late settlements land there). */
        readonly kind: 'closedPeriod';
        readonly tenant: string;
        readonly before?: BudgetState | undefined;
        readonly after: BudgetState;
      }
    | {
        readonly kind: 'reservation';
        readonly before?: Reservation | undefined;
        readonly after: Reservation;
      }
    | { readonly kind: 'refusal'; readonly refusal: Refusal }
    /** An audit record, written in its change's own transaction (a refund's included). */
    | { readonly kind: 'audit'; readonly record: AuditRecord }
    | { readonly kind: 'other' }
  );

const image = (raw: unknown): Item | undefined =>
  raw ? unmarshall(raw as Record<string, AttributeValue>) : undefined;

/** What one image shows of a budget: its own counters (shard 0's alone, if sharded). */
function budgetStateOf(item: Item): BudgetState {
  const { ref, counters, overdraftLimit, thresholds, period } = budgetOfItem(item);
  return {
    ref,
    counters,
    overdraftLimit,
    thresholds,
    ...(period && { period: { start: period.start, end: period.end } }),
  };
}

/** One record of the table's stream, as Lambda's event source mapping delivers it. */
export type StreamRecord = DynamoDBRecord;

/** `clock`: the time of a record that carries none. */
export function decodeStreamRecord(record: StreamRecord, clock = Date.now): TableChange {
  const seconds = record.dynamodb?.ApproximateCreationDateTime;
  const base: RecordBase = {
    recordId: record.eventID ?? record.dynamodb?.SequenceNumber ?? '',
    at: seconds === undefined ? clock() : Math.round(seconds * 1000),
  };
  if (record.eventName === 'REMOVE') return { ...base, kind: 'other' };
  const before = image(record.dynamodb?.OldImage);
  const after = image(record.dynamodb?.NewImage);
  if (!after) return { ...base, kind: 'other' };
  if (after.type === 'ledger') {
    return {
      ...base,
      kind: 'ledger',
      tenant: String(after.tenant),
      shards: shardCountOf(after),
      before: before && budgetStateOf(before),
      after: budgetStateOf(after),
    };
  }
  if (after.type === 'ledger-shard') {
    return {
      ...base,
      kind: 'shard',
      ref: { scope: String(after.scope), unit: after.unit as Unit },
      pressure: before !== undefined && takesBudget(countersOf(before), countersOf(after)),
    };
  }
  if (after.type === 'ledger-period') {
    return {
      ...base,
      kind: 'closedPeriod',
      tenant: String(after.tenant),
      before: before && budgetStateOf(before),
      after: budgetStateOf(after),
    };
  }
  if (after.type === 'reservation') {
    return {
      ...base,
      kind: 'reservation',
      before: before && isReservationItem(before) ? reservationOf(before) : undefined,
      after: reservationOf(after),
    };
  }
  if (after.type === 'refusal' && !before)
    return { ...base, kind: 'refusal', refusal: refusalOf(after) };
  if (after.type === 'audit' && !before)
    return { ...base, kind: 'audit', record: auditRecordOf(after) };
  return { ...base, kind: 'other' };
}
