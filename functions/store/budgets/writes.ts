import type { AuditEntry } from '../../domain/audit.js';
import {
  type Budget,
  type BudgetStatus,
  type Budgets,
  NO_BUDGETS,
  shardCount,
} from '../../domain/budget.js';
import type { LedgerChange } from '../../domain/ledger.js';
import type { Segment } from '../../domain/scopes.js';
import { type IdempotencyScope, idempotencyItem } from '../entities/idempotency.js';
import {
  budgetCapsAttributes,
  ledgerIndexItems,
  ledgerItem,
  shardItem,
  shardKey,
  thresholdsAttribute,
} from '../entities/ledger.js';
import type { OutcomeToStore } from '../entities/outcome.js';
import type { ShardedBudgets } from '../entities/tenant.js';
import { and, attr, putIfAbsent, type TransactItem, update } from '../expressions.js';
import { keys } from '../keys.js';
import { countersDelta } from '../overview.js';
import { tenantWithDimensions } from '../tenants.js';
import { transact } from '../transact.js';
import {
  auditPut,
  type GuardedTransaction,
  transactWrite,
  type WriteOutcome,
  writeAudited,
} from '../write.js';
import { notClosedBudget, openBudget, placeChanges, shardCountIs } from './placement.js';
import { forgetShards } from './shard-cache.js';

// A budget's writes of the control plane: its creation, a funding, its settings, its status.
// Each carries its audit record in the same transaction.

export interface NewLedger {
  readonly tenant: string;
  readonly segments: readonly Segment[];
  /** Sharded: its layout holds the shards it starts with (shard 0 is the ledger item). */
  readonly budget: Budget;
  readonly createdAt: string;
  readonly audit: AuditEntry;
  /** A sharded budget: the tenant's sharded budgets as read, which it joins. */
  readonly shardedBudgets?: ShardedBudgets | undefined;
}

/**
 * The ledger and one index entry per path segment, conditioned on the tenant existing (the
 * admin key may name any tenant), with its audit record: segments + 3 items, all or nothing.
 */
export function newLedgerTransaction(n: NewLedger): TransactItem[] {
  const { budget } = n;
  const { scope, unit } = budget.ref;
  const shards = budget.layout.kind === 'sharded' ? budget.layout.shards : undefined;
  return [
    // Counted in the overview's counters (store/overview.ts) from its creation.
    putIfAbsent({ ...ledgerItem(n.tenant, budget, n.createdAt), counted: true }),
    ...ledgerIndexItems(n.tenant, budget.ref, n.segments).map(putIfAbsent),
    tenantWithDimensions(
      n.tenant,
      n.segments.filter((x) => x.kind === 'dimensions').map((x) => x.value.split('=')[0] ?? ''),
      shards && n.shardedBudgets
        ? { read: n.shardedBudgets, scope, unit, shards: shards.length }
        : undefined,
      true,
    ),
    auditPut(n.audit),
    ...(shards ?? [])
      .slice(1)
      .map((s, i) => putIfAbsent(shardItem(budget.ref, i + 1, s, 'ACTIVE', budget.period))),
    countersDelta({ [`budgets_${budget.status}`]: 1, [`unit_${unit}`]: 1 }),
  ];
}

/** `stale`: another sharded budget of the tenant was created since its map was read. */
export async function insertLedger(
  n: NewLedger,
): Promise<'inserted' | 'duplicate' | 'noTenant' | 'tenantClosed' | 'stale'> {
  const outcome = await transact(newLedgerTransaction(n));
  if (outcome.kind === 'committed') return 'inserted';
  const tenant = outcome.reasons[n.segments.length + 1];
  if (tenant?.code !== 'ConditionalCheckFailed') return 'duplicate';
  if (tenant.item?.type !== 'tenant') return 'noTenant';
  return tenant.item.status === 'CLOSED' ? 'tenantClosed' : 'stale';
}

/**
 * One funding change (on a sharded budget: every shard, laid out afresh), its idempotency
 * record and its audit record, in one transaction.
 */
export function fundingTransaction(
  change: LedgerChange,
  idempotency: { scope: IdempotencyScope; outcome: OutcomeToStore },
  audit: AuditEntry,
  budgets: Budgets = NO_BUDGETS,
): GuardedTransaction {
  const placed = placeChanges([change], budgets, 0);
  return {
    items: [
      ...placed.items,
      putIfAbsent(idempotencyItem(idempotency.scope, idempotency.outcome, audit.atMs)),
      auditPut(audit),
    ],
    layout: { recordAt: placed.items.length, proofs: placed.proofs, touches: placed.touches },
  };
}

export function applyFunding(
  change: LedgerChange,
  idempotency: { scope: IdempotencyScope; outcome: OutcomeToStore },
  audit: AuditEntry,
  budgets: Budgets = NO_BUDGETS,
): Promise<WriteOutcome> {
  return transactWrite(fundingTransaction(change, idempotency, audit, budgets), 'settle');
}

/** What an operator may change on a budget (its counters change only by funding). */
export type BudgetSettings = Pick<
  Budget,
  'overdraftLimit' | 'caps' | 'thresholds' | 'maxReservationAmount'
>;

/**
 * New overdraft limit, caps, thresholds and cap of one reservation on the budget's ledger item (shard 0 holds them), if
 * they are still what was read and the budget is not closed, with the audit record; 'stale'
 * otherwise.
 */
export async function updateBudgetSettings(
  before: Budget,
  after: BudgetSettings,
  at: string,
  audit: AuditEntry,
): Promise<'updated' | 'stale'> {
  const { scope, unit } = before.ref;
  const caps = after.caps && budgetCapsAttributes(after.caps);
  const written = await writeAudited(
    [
      update(
        keys.ledger(scope, unit),
        {
          set: {
            overdraft_limit: after.overdraftLimit,
            updated_at: at,
            caps: caps?.caps,
            caps_bps: caps?.caps_bps,
            thresholds: after.thresholds && thresholdsAttribute(after.thresholds),
            max_hold: after.maxReservationAmount,
          },
          remove: [
            ...(caps ? [] : ['caps']),
            ...(caps?.caps_bps === undefined ? ['caps_bps'] : []),
            ...(after.thresholds ? [] : ['thresholds']),
            ...(after.maxReservationAmount === undefined ? ['max_hold'] : []),
          ],
        },
        {
          condition: and(
            attr('overdraft_limit').eq(before.overdraftLimit),
            before.caps
              ? attr('caps').eq(budgetCapsAttributes(before.caps).caps)
              : attr('caps').notExists(),
            before.thresholds
              ? attr('thresholds').eq(thresholdsAttribute(before.thresholds))
              : attr('thresholds').notExists(),
            before.maxReservationAmount === undefined
              ? attr('max_hold').notExists()
              : attr('max_hold').eq(before.maxReservationAmount),
            notClosedBudget(),
          ),
        },
      ),
    ],
    audit,
  );
  forgetShards(before.ref);
  return written === 'written' ? 'updated' : 'stale';
}

/**
 * A budget's status on every item of it (a hold may land on any shard), from the status read,
 * with the audit record; 'stale' when another change came first.
 */
export async function setBudgetStatus(
  before: Budget,
  to: BudgetStatus,
  at: string,
  audit: AuditEntry | undefined,
): Promise<'updated' | 'stale'> {
  const { scope, unit } = before.ref;
  const from = before.status;
  // The budget moves between the overview's counts; one made before they existed is counted by
  // its first change of status (its unit too).
  const attempt = (counted: boolean) =>
    writeAudited(
      [
        ...Array.from({ length: shardCount(before) }, (_, k) =>
          update(
            shardKey(scope, unit, k),
            { set: { status: to, updated_at: at, ...(k === 0 && { counted: true }) } },
            {
              condition: and(
                attr('pk').exists(),
                from === 'ACTIVE' ? openBudget() : attr('status').eq(from),
                // Every shard as counted when read: a budget given more shards since reads again.
                k === 0 && shardCountIs(shardCount(before)),
                k === 0 && (counted ? attr('counted').exists() : attr('counted').notExists()),
              ),
            },
          ),
        ),
        countersDelta(
          counted
            ? { [`budgets_${from}`]: -1, [`budgets_${to}`]: 1 }
            : { [`budgets_${to}`]: 1, [`unit_${unit}`]: 1 },
        ),
      ],
      audit,
    );
  const written = (await attempt(true)) === 'written' || (await attempt(false)) === 'written';
  forgetShards(before.ref);
  return written ? 'updated' : 'stale';
}
