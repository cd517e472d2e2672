import { randomInt } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Unit } from '../domain/amounts.js';
import type { Refusal } from '../domain/budget-events.js';
import type { Reservation } from '../domain/reservation.js';
import { documentClient, tableName } from './client.js';
import { isRefusalItem, refusalOf } from './entities/refusal.js';
import { isReservationItem, reservationOf } from './entities/reservation.js';
import {
  and,
  attr,
  type Item,
  queryExpressions,
  type TransactItem,
  update,
} from './expressions.js';
import { COUNTER_SPREAD, counterKey, directoryTimeFloor, RECENT_SPREAD } from './keys.js';
import { getItems } from './transact.js';

// What the operator's overview reads (GET /v1/admin/overview, docs/decisions.md § Overview):
// counters the admin writes maintain in their own transactions, and the recent refusals and
// expiries of the directory index. Never a Scan: a fixed number of reads whatever the table holds.

/** A count of tenants or budgets by status, or of budgets by unit. */
export type CounterName = `tenants_${string}` | `budgets_${string}` | `unit_${Unit}`;

/**
 * Adds the deltas to one counter item of COUNTER_SPREAD, picked at random: concurrent changes
 * (a bulk action's rows) rarely meet on one. Part of the change's own transaction.
 */
export const countersDelta = (deltas: Partial<Record<CounterName, number>>): TransactItem =>
  update(counterKey(randomInt(COUNTER_SPREAD)), {
    set: { type: 'counters' },
    increment: deltas as Record<string, number>,
  });

/** Every counter, summed over its items (one BatchGetItem). */
export async function readCounters(): Promise<Record<string, number>> {
  const keys = Array.from({ length: COUNTER_SPREAD }, (_, k) => counterKey(k));
  const items = await getItems(keys);
  const sums: Record<string, number> = {};
  for (const item of items.values()) {
    for (const [name, value] of Object.entries(item)) {
      if (typeof value === 'number' && /^(tenants|budgets|unit)_/.test(name)) {
        sums[name] = (sums[name] ?? 0) + value;
      }
    }
  }
  return sums;
}

/** The newest directory entries of a spread listing since `fromMs`, at most `limit` of each part. */
async function recent(prefix: string, fromMs: number, limit: number): Promise<Item[]> {
  const parts = await Promise.all(
    Array.from({ length: RECENT_SPREAD }, (_, k) =>
      documentClient.send(
        new QueryCommand({
          TableName: tableName(),
          IndexName: 'directory',
          ...queryExpressions(
            and(
              attr('dir_pk').eq(`${prefix}#${k}`),
              attr('dir_sk').gte(directoryTimeFloor(fromMs)),
            ),
          ),
          ScanIndexForward: false,
          Limit: limit,
        }),
      ),
    ),
  );
  return parts
    .flatMap((p) => p.Items ?? [])
    .sort((a, b) => (String(a.dir_sk) < String(b.dir_sk) ? 1 : -1));
}

/** Refusals recorded since `fromMs`, newest first (at most RECENT_SPREAD × `limit`). */
export async function recentRefusals(fromMs: number, limit: number): Promise<Refusal[]> {
  return (await recent('DENIALS', fromMs, limit)).filter(isRefusalItem).map(refusalOf);
}

/** Reservations expired since `fromMs`, newest first (at most RECENT_SPREAD × `limit`). */
export async function recentExpiries(fromMs: number, limit: number): Promise<Reservation[]> {
  return (await recent('EXPIRIES', fromMs, limit)).filter(isReservationItem).map(reservationOf);
}
