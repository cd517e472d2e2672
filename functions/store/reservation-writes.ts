import type { Amount } from '../domain/amounts.js';
import type { AuditEntry } from '../domain/audit.js';
import { type Budgets, NO_BUDGETS } from '../domain/budget.js';
import { exactJson } from '../domain/json.js';
import type { LedgerChange } from '../domain/ledger.js';
import { affectedScopes, type Reservation, settleDeadline } from '../domain/reservation.js';
import { canonicalValue, LEVELS } from '../domain/scopes.js';
import { auditPut } from './audit.js';
import { tableName } from './client.js';
import {
  type IdempotencyScope,
  idempotencyPut,
  outcomeAttributesOf,
  type StoredOutcome,
  settledOutcomeAttributes,
} from './idempotency.js';
import { dueShard, dueSortKey, keys, listPartitions, listSortKey, listSpreadOf } from './keys.js';
import { ledgerUpdate } from './ledgers.js';
import { placeChanges, seedOf } from './shards.js';
import { type Item, putIfAbsent, type TransactItem, transact } from './transact.js';
import { type GuardedTransaction, transactWrite, type WriteOutcome } from './write.js';

export interface NewReservation {
  readonly reservation: Reservation;
  readonly holds: readonly LedgerChange[];
  readonly outcome: StoredOutcome;
  /** The budgets of the scopes, as read: a sharded one's holds are placed on its shards. */
  readonly budgets?: Budgets | undefined;
}

/** The listing index keys: one per filter GET /v1/reservations can pick an index by. */
function listAttributes(r: Reservation): Item {
  const spread = listSpreadOf(r.reservationId);
  const attributes: Item = {
    tenant_pk: listPartitions.tenant(r.tenant, spread),
    status_pk: listPartitions.status(r.tenant, r.status, spread),
    list_sk: listSortKey(r.createdAtMs, r.reservationId),
  };
  for (const level of LEVELS.slice(1)) {
    const value = r.subject[level];
    if (value !== undefined)
      attributes[`${level}_pk`] = listPartitions.level(
        r.tenant,
        level,
        canonicalValue(level, value),
        spread,
      );
  }
  return attributes;
}

/**
 * Holds on every scope (one item each, or a sharded budget's shards), then the reservation
 * record, which is its own idempotency record and remembers the shard of each hold.
 */
export function reserveTransaction(n: NewReservation, attempt = 0): GuardedTransaction {
  return reserveTransactions(n)(attempt);
}

/**
 * The reserve's transaction of each attempt: the reservation record and its stored outcome are
 * built once; an attempt after a conflict only places the holds again (another shard).
 */
function reserveTransactions(n: NewReservation): (attempt: number) => GuardedTransaction {
  const r = n.reservation;
  const record: Item = {
    ...keys.reservation(r.reservationId),
    type: 'reservation',
    // The id is in pk and the scope path is the last scope: neither is stored twice, so a
    // typical 3-scope reservation stays under 1 KB (2 write units per transactional write).
    tenant: r.tenant,
    status: r.status,
    idempotency_key: r.idempotencyKey,
    subject: r.subject,
    action: r.action,
    unit: r.reserved.unit,
    estimate: r.reserved.amount,
    created_at_ms: r.createdAtMs,
    expires_at_ms: r.expiresAtMs,
    // The first expiry stays derivable after extends move expires_at_ms (the replay needs it).
    ttl_ms: r.ttlMs,
    grace_period_ms: r.gracePeriodMs,
    deadline_ms: settleDeadline(r),
    scopes: affectedScopes(r),
    overage_policy: r.overagePolicy,
    // The period each hold was taken in, 0 where the budget does not roll over: only if any does.
    ...(r.holds.some((h) => h.periodStart) && {
      held_in: r.holds.map((h) => h.periodStart ?? 0),
    }),
    // As JSON text: exact numbers and any keys survive (DynamoDB maps would refuse them).
    ...(r.metadata !== undefined && { metadata_json: exactJson(r.metadata) }),
    ...listAttributes(r),
    due_pk: dueShard(r.reservationId),
    due_sk: dueSortKey(settleDeadline(r), r.tenant, r.reservationId),
  };
  const stored = { ...record, ...outcomeAttributesOf(record, n.outcome) };
  return (attempt) => {
    const placed = placeChanges(
      n.holds,
      n.budgets ?? NO_BUDGETS,
      seedOf(r.reservationId, attempt),
      ledgerUpdate,
    );
    // Keyed by a hash of (tenant, idempotency key): a replay fails here instead of reserving
    // twice. It remembers the shard each hold took, for the settlement.
    const put = putIfAbsent({
      ...stored,
      ...(placed.shards.some((k) => k !== 0) && { hold_shards: placed.shards }),
    });
    return {
      items: [...placed.items, put],
      layout: { recordAt: placed.items.length, proofs: placed.proofs },
    };
  };
}

export function insertReservation(n: NewReservation): Promise<WriteOutcome> {
  return transactWrite(reserveTransactions(n));
}

export interface Settlement {
  readonly reservation: Reservation;
  /** Expiries go in batches (expireReservations). */
  readonly to: 'COMMITTED' | 'RELEASED';
  readonly now: number;
  readonly changes: readonly LedgerChange[];
  readonly committed?: Amount | undefined;
  readonly detail?: Record<string, unknown> | undefined;
  /** Commit and release record their outcome; the sweeper's expiry has none to record. */
  readonly idempotency?:
    | { readonly scope: IdempotencyScope; readonly outcome: StoredOutcome }
    | undefined;
  /** The budgets of the scopes, as read: a sharded one's changes are placed on its shards. */
  readonly budgets?: Budgets | undefined;
  /** An operator's forced release is audited in the same transaction. */
  readonly audit?: AuditEntry | undefined;
}

/**
 * Commit or release: one transaction conditioned on the reservation still being ACTIVE
 * and before its deadline (an expiry: after it), so whichever settles first wins.
 */
export function settleTransaction(s: Settlement): GuardedTransaction {
  const placed = placeChanges(
    s.changes,
    s.budgets ?? NO_BUDGETS,
    seedOf(s.reservation.reservationId),
    ledgerUpdate,
  );
  const r = s.reservation;
  const outcome = s.idempotency
    ? settledOutcomeAttributes(
        { scopes: affectedScopes(r), unit: r.reserved.unit, estimate: r.reserved.amount },
        s.committed?.amount,
        s.idempotency.scope.operation,
        s.idempotency.scope.key,
        s.idempotency.outcome,
      )
    : undefined;
  const items: TransactItem[] = [
    settleUpdate(r, s.to, s.now, s.committed, s.detail, outcome),
    ...placed.items,
    ...(s.audit ? [auditPut(s.audit)] : []),
  ];
  // No record item: a concurrent duplicate fails the reservation's condition, and the read
  // that follows finds its outcome on the reservation (store/snapshot.ts).
  return { items, layout: { proofs: [undefined, ...placed.proofs] } };
}

/**
 * The reservation's own update of a settle: conditioned on ACTIVE, the tenant and the deadline.
 * What only an ACTIVE reservation needs goes (the due-index keys, the deadline its conditions
 * compare, the shards its holds are on), so the item settled stays under 1 KB.
 */
function settleUpdate(
  r: Reservation,
  to: Settlement['to'] | 'EXPIRED',
  now: number,
  committed?: Amount,
  detail?: Record<string, unknown>,
  outcome?: Item,
): TransactItem {
  const beforeDeadline = to !== 'EXPIRED';
  const outcomeNames = Object.keys(outcome ?? {});
  // An empty detail (a commit without metrics or metadata) records nothing: no "{}" to store.
  const recorded = detail && Object.keys(detail).length > 0 ? detail : undefined;
  return {
    Update: {
      TableName: tableName(),
      Key: keys.reservation(r.reservationId),
      UpdateExpression: `SET #status = :to, #status_pk = :status_pk, #finalized = :now${committed ? ', #committed = :committed' : ''}${recorded ? ', #detail = :detail' : ''}${outcomeNames.map((n) => `, #${n} = :${n}`).join('')} REMOVE #due_pk, #due_sk, #deadline, #hold_shards, #held_in`,
      ConditionExpression: `#status = :active AND #tenant = :tenant AND #deadline ${beforeDeadline ? '>' : '<='} :now`,
      ExpressionAttributeNames: {
        '#status': 'status',
        '#status_pk': 'status_pk',
        '#finalized': 'finalized_at_ms',
        '#tenant': 'tenant',
        '#deadline': 'deadline_ms',
        '#due_pk': 'due_pk',
        '#due_sk': 'due_sk',
        '#hold_shards': 'hold_shards',
        '#held_in': 'held_in',
        ...(committed && { '#committed': 'committed' }),
        ...(recorded && { '#detail': `${to.toLowerCase()}_detail_json` }),
        ...Object.fromEntries(outcomeNames.map((n) => [`#${n}`, n])),
      },
      ExpressionAttributeValues: {
        ':to': to,
        // Listings read every spread, so an item listed before spreads existed may move to one.
        ':status_pk': listPartitions.status(r.tenant, to, listSpreadOf(r.reservationId)),
        ':now': now,
        ':active': 'ACTIVE',
        ':tenant': r.tenant,
        ...(committed && { ':committed': committed.amount }),
        ...(recorded && { ':detail': exactJson(recorded) }),
        ...Object.fromEntries(outcomeNames.map((n) => [`:${n}`, outcome?.[n]])),
      },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}

/**
 * Many expiries in one transaction: each reservation conditioned on ACTIVE and due at `now`,
 * and each ledger updated once with the summed returns (`changes`, one per ledger), so a batch
 * costs reservations + ledgers items instead of reservations × (scopes + 1).
 */
export function expiryBatchTransaction(
  reservations: readonly Reservation[],
  changes: readonly LedgerChange[],
  now: number,
): TransactItem[] {
  return [
    ...reservations.map((r) => settleUpdate(r, 'EXPIRED', now)),
    // Unguarded returns, each pinned to the shard its holds are on: no ledger needs reading.
    ...placeChanges(changes, NO_BUDGETS, 0, ledgerUpdate).items,
  ];
}

/** `stale` names the reservations settled meanwhile (a commit or another sweep won them). */
export async function expireReservations(
  reservations: readonly Reservation[],
  changes: readonly LedgerChange[],
  now: number,
): Promise<{ readonly kind: 'written' } | { readonly kind: 'stale'; readonly ids: string[] }> {
  const outcome = await transact(expiryBatchTransaction(reservations, changes, now), 'settle');
  if (outcome.kind === 'committed') return { kind: 'written' };
  const ids = reservations.flatMap((r, i) =>
    outcome.reasons[i]?.code === 'ConditionalCheckFailed' ? [r.reservationId] : [],
  );
  return { kind: 'stale', ids };
}

/** `stale` also when the reservation is no longer ACTIVE-and-settleable: read it again. */
export function settleReservation(s: Settlement): Promise<WriteOutcome> {
  return transactWrite(settleTransaction(s), 'settle');
}

export interface Extension {
  readonly reservation: Reservation;
  readonly newExpiresAtMs: number;
  readonly now: number;
  readonly metadata?: Record<string, unknown> | undefined;
  readonly idempotency: { readonly scope: IdempotencyScope; readonly outcome: StoredOutcome };
}

/** Moves expiry (and the sweeper's due key) forward; conditioned on the expiry that was read. */
export function extensionTransaction(e: Extension): GuardedTransaction {
  const r = e.reservation;
  const newDeadline = e.newExpiresAtMs + r.gracePeriodMs;
  const items: TransactItem[] = [
    {
      Update: {
        TableName: tableName(),
        Key: keys.reservation(r.reservationId),
        UpdateExpression: `SET #expires = :expires, #deadline = :deadline, #due_sk = :due_sk${e.metadata ? ', #meta = :meta' : ''}`,
        ConditionExpression:
          '#status = :active AND #tenant = :tenant AND #expires = :seen AND #expires > :now',
        ExpressionAttributeNames: {
          '#status': 'status',
          '#tenant': 'tenant',
          '#expires': 'expires_at_ms',
          '#deadline': 'deadline_ms',
          '#due_sk': 'due_sk',
          ...(e.metadata && { '#meta': 'extend_metadata_json' }),
        },
        ExpressionAttributeValues: {
          ':active': 'ACTIVE',
          ':tenant': r.tenant,
          ':seen': r.expiresAtMs,
          ':now': e.now,
          ':expires': e.newExpiresAtMs,
          ':deadline': newDeadline,
          ':due_sk': dueSortKey(newDeadline, r.tenant, r.reservationId),
          ...(e.metadata && { ':meta': exactJson(e.metadata) }),
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    idempotencyPut(e.idempotency.scope, e.idempotency.outcome, e.now),
  ];
  return { items, layout: { recordAt: 1, proofs: [] } };
}

export function moveReservationExpiry(e: Extension): Promise<WriteOutcome> {
  return transactWrite(extensionTransaction(e), 'settle');
}
