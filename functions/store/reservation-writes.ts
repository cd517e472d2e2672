import type { Amount } from '../domain/amounts.js';
import type { AuditEntry } from '../domain/audit.js';
import { type Budgets, NO_BUDGETS } from '../domain/budget.js';
import type { LedgerChange } from '../domain/ledger.js';
import type { Hold, Reservation } from '../domain/reservation.js';
import { oneRewriteAtATime, placeChanges, seedOf } from './budgets/placement.js';
import { type IdempotencyScope, idempotencyItem } from './entities/idempotency.js';
import type { OutcomeToStore } from './entities/outcome.js';
import {
  extensionUpdate,
  holdShardsAttribute,
  parentUpdate,
  reservationItem,
  settlementUpdate,
} from './entities/reservation.js';
import { putIfAbsent, type TransactItem } from './expressions.js';
import { transact } from './transact.js';
import { auditPut, type GuardedTransaction, transactWrite, type WriteOutcome } from './write.js';

export interface NewReservation {
  readonly reservation: Reservation;
  readonly holds: readonly LedgerChange[];
  readonly outcome: OutcomeToStore;
  /** The budgets of the scopes, as read: a sharded one's holds are placed on its shards. */
  readonly budgets?: Budgets | undefined;
}

/**
 * Holds on every scope (one item each, or a sharded budget's shards), then the reservation
 * record, which is its own idempotency record and remembers the shard of each hold.
 */
export function reserveTransaction(n: NewReservation, attempt = 0): GuardedTransaction {
  const built = reserveTransactions(n)(attempt);
  if (!built) throw new Error('a reserve rewriting a sharded budget is not sent again');
  return built;
}

/**
 * The reserve's transaction of each attempt: the reservation record and its stored outcome are
 * built once; an attempt after a conflict only places the holds again (another shard), unless
 * they rewrite a sharded budget whole (then the reserve reads again: store/write.ts).
 */
function reserveTransactions(
  n: NewReservation,
): (attempt: number) => GuardedTransaction | undefined {
  const r = n.reservation;
  const record = reservationItem(r, n.outcome);
  return (attempt) => {
    const placed = placeChanges(n.holds, n.budgets ?? NO_BUDGETS, seedOf(r.reservationId, attempt));
    if (attempt > 0 && placed.exact) return undefined;
    // Keyed by a hash of (tenant, idempotency key): a replay fails here instead of reserving
    // twice. It remembers the shard each hold took, for the settlement.
    const put = putIfAbsent({ ...record, ...holdShardsAttribute(placed.shards) });
    return {
      items: [...placed.items, put],
      layout: { recordAt: placed.items.length, proofs: placed.proofs, touches: placed.touches },
    };
  };
}

export async function insertReservation(n: NewReservation): Promise<WriteOutcome> {
  const build = reserveTransactions(n);
  const rewritten = placeChanges(n.holds, n.budgets ?? NO_BUDGETS, 0).rewritten;
  if (rewritten.length === 0) return transactWrite(build);
  return (await oneRewriteAtATime(rewritten, () => transactWrite(build))) ?? STALE;
}

/** A write not sent: what it was decided on has moved; read again. */
const STALE: WriteOutcome = { kind: 'stale', refused: [] };

/** A child settling into its ACTIVE parent: the parent as read, and as the settlement leaves it. */
export interface IntoParent {
  readonly reservation: Reservation;
  readonly after: Reservation;
}

export interface Settlement {
  readonly reservation: Reservation;
  /** Expiries go in batches (expireReservations), but a child's into its parent. */
  readonly to: 'COMMITTED' | 'RELEASED' | 'EXPIRED';
  readonly now: number;
  readonly changes: readonly LedgerChange[];
  readonly committed?: Amount | undefined;
  /** A commit's holds with the debt it ran up (a refund returns it first). */
  readonly holds?: readonly Hold[] | undefined;
  readonly detail?: Record<string, unknown> | undefined;
  /** Commit and release record their outcome; the sweeper's expiry has none to record. */
  readonly idempotency?:
    | { readonly scope: IdempotencyScope; readonly outcome: OutcomeToStore }
    | undefined;
  /** The budgets of the scopes, as read: a sharded one's changes are placed on its shards. */
  readonly budgets?: Budgets | undefined;
  /** An operator's forced release is audited in the same transaction. */
  readonly audit?: AuditEntry | undefined;
  /** A child's settlement updates its parent's hold in the same transaction. */
  readonly parent?: IntoParent | undefined;
}

/**
 * Commit or release: one transaction conditioned on the reservation still being ACTIVE
 * and before its deadline (an expiry: after it), so whichever settles first wins.
 */
export function settleTransaction(s: Settlement): GuardedTransaction {
  const r = s.reservation;
  const placed = placeChanges(s.changes, s.budgets ?? NO_BUDGETS, seedOf(r.reservationId));
  const items: TransactItem[] = [
    settlementUpdate(r, s.to, s.now, {
      committed: s.committed,
      holds: s.holds,
      detail: s.detail,
      outcome: s.idempotency && { key: s.idempotency.scope.key, stored: s.idempotency.outcome },
    }),
    ...placed.items,
    ...(s.audit ? [auditPut(s.audit)] : []),
    ...(s.parent
      ? [
          parentUpdate(s.parent.reservation, s.parent.after, {
            id: r.reservationId,
            change: 'settled',
          }),
        ]
      : []),
  ];
  // No record item: a concurrent duplicate fails the reservation's condition, and the read
  // that follows finds its outcome on the reservation (store/snapshot.ts).
  return { items, layout: { proofs: [undefined, ...placed.proofs], touches: placed.touches } };
}

/** `stale` also when the reservation is no longer ACTIVE-and-settleable: read it again. */
export function settleReservation(s: Settlement): Promise<WriteOutcome> {
  return transactWrite(settleTransaction(s), 'settle');
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
    ...reservations.map((r) => settlementUpdate(r, 'EXPIRED', now)),
    // Unguarded returns, each pinned to the shard its holds are on: no ledger needs reading.
    ...placeChanges(changes, NO_BUDGETS, 0).items,
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

export interface Extension {
  readonly reservation: Reservation;
  readonly newExpiresAtMs: number;
  readonly now: number;
  readonly metadata?: Record<string, unknown> | undefined;
  readonly idempotency: { readonly scope: IdempotencyScope; readonly outcome: OutcomeToStore };
}

/** Moves expiry (and the sweeper's due key) forward; conditioned on the expiry that was read. */
export function extensionTransaction(e: Extension): GuardedTransaction {
  const items: TransactItem[] = [
    extensionUpdate(e.reservation, e.newExpiresAtMs, e.now, e.metadata),
    putIfAbsent(idempotencyItem(e.idempotency.scope, e.idempotency.outcome, e.now)),
  ];
  return { items, layout: { recordAt: 1, proofs: [] } };
}

export function moveReservationExpiry(e: Extension): Promise<WriteOutcome> {
  return transactWrite(extensionTransaction(e), 'settle');
}
