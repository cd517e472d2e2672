import type { AuditEntry } from '../domain/audit.js';
import type { Budgets } from '../domain/budget.js';
import type { Delegated } from '../domain/delegation.js';
import type { Reservation } from '../domain/reservation.js';
import { oneRewriteAtATime, placeChanges, seedOf } from './budgets/placement.js';
import { type IdempotencyScope, idempotencyItem } from './entities/idempotency.js';
import type { OutcomeToStore } from './entities/outcome.js';
import {
  holdShardsAttribute,
  isReservationItem,
  parentUpdate,
  reservationItem,
  reservationOf,
} from './entities/reservation.js';
import { type Item, putIfAbsent } from './expressions.js';
import { keys } from './keys.js';
import { partitionInOrder } from './pages.js';
import { getItems } from './transact.js';
import { auditPut, type GuardedTransaction, transactWrite, type WriteOutcome } from './write.js';

// Delegations (docs/decisions.md § Delegations): the parent's update, the delegation's
// idempotency record, the child's reservation item, the child's place in its parent's listing
// and the holds on the child's own scopes: one transaction. No ledger of the parent's scopes is
// written: the budget is moved between the two holds, not taken again.

export interface NewDelegation {
  /** The parent as read. */
  readonly parent: Reservation;
  readonly delegated: Delegated;
  readonly budgets: Budgets;
  readonly idempotency: { readonly scope: IdempotencyScope; readonly outcome: OutcomeToStore };
  readonly now: number;
  /** Every delegation is audited (parent and child named), in its own transaction. */
  readonly audit: AuditEntry;
}

/**
 * Each attempt's transaction, as a reserve's (store/reservation-writes.ts): after a conflict the
 * holds go to another shard, unless they rewrite a sharded budget whole (then it reads again).
 */
function delegationTransactions(
  n: NewDelegation,
): (attempt: number) => GuardedTransaction | undefined {
  const { child, parent: after, holds } = n.delegated;
  const { scope, outcome } = n.idempotency;
  const record = reservationItem(child, outcome);
  const sequence = after.delegations ?? 1;
  return (attempt) => {
    const placed = placeChanges(holds, n.budgets, seedOf(child.reservationId, attempt));
    if (attempt > 0 && placed.exact) return undefined;
    // The child's holds on the parent's scopes are on the parent's shards.
    const shards = [...n.parent.holds.map((h) => h.shard), ...placed.shards];
    const head = [
      parentUpdate(n.parent, after, { id: child.reservationId, change: 'delegated' }),
      putIfAbsent(idempotencyItem(scope, outcome, n.now)),
      putIfAbsent({ ...record, ...holdShardsAttribute(shards) }),
      putIfAbsent({
        ...keys.delegation(n.parent.reservationId, sequence),
        type: 'delegation',
        child_id: child.reservationId,
      }),
      auditPut(n.audit),
    ];
    return {
      items: [...head, ...placed.items],
      layout: {
        // The child's item keeps the delegation's outcome too, and outlives the idempotency
        // record (7 days): a key reused after that replays from it (or is 409
        // IDEMPOTENCY_MISMATCH), as a reserve's; a concurrent duplicate fails both.
        recordAt: 2,
        proofs: [...head.map(() => undefined), ...placed.proofs],
        touches: placed.touches,
      },
    };
  };
}

export async function insertDelegation(n: NewDelegation): Promise<WriteOutcome> {
  const build = delegationTransactions(n);
  const { rewritten } = placeChanges(n.delegated.holds, n.budgets, 0);
  if (rewritten.length === 0) return transactWrite(build, 'settle');
  // A write not sent (another request of this process rewrote the budget): read again.
  return (
    (await oneRewriteAtATime(rewritten, () => transactWrite(build, 'settle'))) ?? {
      kind: 'stale',
      refused: [],
    }
  );
}

/** A reservation's children in the order they were made, after a cursor's position. */
export async function queryDelegations(q: {
  readonly parentId: string;
  readonly after?: string | undefined;
  readonly limit: number;
}): Promise<{ readonly children: Reservation[]; readonly nextPosition?: string | undefined }> {
  const page = await partitionInOrder({
    partition: keys.delegation(q.parentId, 0).pk,
    after: q.after,
    limit: q.limit,
  });
  const wanted = page.items.map((i: Item) => keys.reservation(String(i.child_id)));
  const items = wanted.length > 0 ? await getItems(wanted) : new Map<string, Item>();
  const children = wanted.flatMap((k) => {
    const item = items.get(k.pk);
    return isReservationItem(item) ? [reservationOf(item)] : [];
  });
  return { children, nextPosition: page.nextPosition };
}
