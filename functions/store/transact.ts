import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { config } from '../config/settings.js';
import { pastDeadline } from '../deadline.js';
import { RetryLaterError } from '../domain/errors.js';
import { noteConflictRetry } from '../telemetry/invocation.js';
import { budgetsBlamed, busyRetryAfterMs, noteAttempt, noteHeat } from './budgets/heat.js';
import { tableName } from './client.js';
import type { Item, Key, TransactItem } from './expressions.js';
import { batchGetItems, itemOf, transactWriteItems } from './wire.js';

/** Index-aligned with the items sent: the code and, on a failed condition, the item as it was. */
export interface CancellationReason {
  readonly code: string;
  readonly item?: Item | undefined;
}

export type TransactOutcome =
  | { readonly kind: 'committed' }
  | { readonly kind: 'cancelled'; readonly reasons: readonly CancellationReason[] };

/**
 * How hard a write tries before answering 503 (RetryLaterError). DynamoDB cancels, never
 * queues, a transaction that touches an item another one holds, so under load every attempt is
 * a race. Work that frees or settles budget (commit, release, extend, expiry, funding) must get
 * through, so it tries longest; a reserve, which would take budget, is turned away early, before
 * it holds anything, and its client retries (docs/decisions.md, "Contention").
 */
export type WritePriority = 'admit' | 'settle';

export const CONFLICT_RETRY_BUDGET: Record<
  WritePriority,
  { readonly retries: number; readonly capMs: number }
> = {
  admit: { retries: 6, capMs: 100 },
  settle: { retries: 12, capMs: 200 },
};

/** Full-jitter exponential backoff before retry `attempt` (0-based). */
export const conflictBackoffMs = (attempt: number, capMs: number, random = Math.random()) =>
  random * Math.min(capMs, 10 * 2 ** attempt);

/** Counters the benchmark reads; cheap enough to keep in production. */
export const transactStats = { conflictRetries: 0, busyAnswers: 0 };

/** Cancellation codes after which the same request may succeed a moment later. */
const CONFLICT = 'TransactionConflict';
const THROTTLED = new Set(['ThrottlingError', 'ProvisionedThroughputExceeded']);

/**
 * One TransactWriteItems. A condition failure is an outcome for the caller to classify; a
 * conflict with another transaction or a throttled item (nothing was written) is retried with
 * full-jitter backoff within the priority's budget, then answered as RetryLaterError.
 * `retarget` gives the items of retry n (≥ 1): a hold on a sharded budget tries another shard
 * instead of racing again for the one that was busy; undefined, none is worth sending (a write
 * conditioned on every shard as read, which the conflicting write moved): the cancellation is
 * answered, for the caller to read again. `token`: DynamoDB's ClientRequestToken, so the same
 * transaction sent again within 10 minutes (a retried stream batch) is applied once.
 */
export async function transact(
  items: TransactItem[],
  priority: WritePriority = 'admit',
  retarget?: (attempt: number) => TransactItem[] | undefined,
  token?: string,
): Promise<TransactOutcome> {
  const budget = CONFLICT_RETRY_BUDGET[priority];
  let sent = items;
  for (let attempt = 0; ; attempt++) {
    try {
      noteAttempt(sent);
      await transactWriteItems(sent, token);
      return { kind: 'committed' };
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      // CancellationReasons carry the items as the protocol sends them.
      const reasons = (error.CancellationReasons ?? []).map(
        (r): CancellationReason => ({
          code: r.Code ?? 'None',
          item: r.Item ? itemOf(r.Item) : undefined,
        }),
      );
      if (reasons.some((r) => r.code === 'ConditionalCheckFailed'))
        return { kind: 'cancelled', reasons };
      const throttled = reasons.some((r) => THROTTLED.has(r.code));
      if (!throttled && !reasons.some((r) => r.code === CONFLICT)) throw error;
      const blamed = budgetsBlamed(sent, reasons);
      // Past the request's deadline no new attempt starts: nothing was written, busy (429).
      if (attempt >= budget.retries || pastDeadline()) {
        // Turned away busy: the budgets blamed are hot at once (store/budgets/heat.ts).
        for (const ref of blamed) noteHeat(ref, config.AUTO_SHARDS_CONFLICTS);
        transactStats.busyAnswers++;
        // Told to stay away longer the hotter the budget (store/budgets/heat.ts).
        const retryAfterMs = busyRetryAfterMs(blamed) ?? 2 * budget.capMs;
        throw new RetryLaterError(throttled ? 'THROTTLED' : 'CONTENTION', retryAfterMs, {
          cause: error,
        });
      }
      for (const ref of blamed) noteHeat(ref);
      const next = retarget ? retarget(attempt + 1) : sent;
      if (!next) return { kind: 'cancelled', reasons };
      sent = next;
      transactStats.conflictRetries++;
      noteConflictRetry();
      await sleep(conflictBackoffMs(attempt, budget.capMs));
    }
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Strongly consistent BatchGetItem of any number of keys; returns items by pk. */
export async function getItems(keyList: readonly Key[]): Promise<Map<string, Item>> {
  const found = new Map<string, Item>();
  for (const item of await getItemList(keyList)) found.set(String(item.pk), item);
  return found;
}

/** Strongly consistent BatchGetItem of any number of keys (several may share a partition). */
export async function getItemList(keyList: readonly Key[]): Promise<Item[]> {
  const found: Item[] = [];
  const unique = [...new Map(keyList.map((k) => [`${k.pk}\u0000${k.sk}`, k])).values()];
  for (let i = 0; i < unique.length; i += 100) {
    let pending: Key[] = unique.slice(i, i + 100);
    for (let attempt = 0; pending.length > 0; attempt++) {
      const result = await batchGetItems(tableName(), pending);
      found.push(...result.items);
      pending = result.unprocessed;
      if (pending.length > 0) {
        if (pastDeadline()) throw new RetryLaterError('THROTTLED', 500);
        await sleep(Math.random() * Math.min(200, 10 * 2 ** attempt));
      }
    }
  }
  return found;
}
