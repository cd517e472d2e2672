import type { Unit } from '../../domain/amounts.js';
import type { AuditEntry } from '../../domain/audit.js';
import type { ShardMove } from '../../domain/escrow.js';
import type { Period } from '../../domain/period.js';
import { BUDGET_ALLOCATED, shardItem, shardKey } from '../entities/ledger.js';
import type { ShardedBudgets } from '../entities/tenant.js';
import { and, attr, or, putIfAbsent, type TransactItem, update } from '../expressions.js';
import { tenantWithDimensions } from '../tenants.js';
import { transact } from '../transact.js';
import { auditPut } from '../write.js';
import { shardCountIs } from './placement.js';
import { forgetShards } from './shard-cache.js';

// A busy budget given more escrow shards while it serves (PATCH `shards`, docs/decisions.md §
// Escrow shards): the new shards put empty, then the remaining evened out by moves.

/** A budget given more shards (PATCH `shards`): the new ones empty, the count raised. */
export interface ShardGrowth {
  readonly tenant: string;
  readonly scope: string;
  readonly unit: Unit;
  readonly from: number;
  readonly to: number;
  /** As read: shard 0's gate (sharded), or the gate its counters call for (unsharded). */
  readonly gated: boolean;
  /** As read: new shards take it, so a frozen budget stays frozen on every shard. */
  readonly status: 'ACTIVE' | 'FROZEN';
  /** A rolling budget's current period, as read: its new shards carry it. */
  readonly period?: Period | undefined;
  readonly at: string;
  /** The tenant's map of sharded budgets as read, which the budget joins with its new count. */
  readonly sharded: ShardedBudgets;
  readonly audit: AuditEntry;
}

/**
 * The count on shard 0 raised and the new shards put, empty (the budget's sum is unchanged,
 * and invariant E holds: 0 ≥ 0), under the condition that count, gate and status are still as
 * read. Readers that still know the old count see the same budget: the new shards hold nothing.
 */
export function shardGrowthTransaction(g: ShardGrowth): TransactItem[] {
  const ref = { scope: g.scope, unit: g.unit };
  const empty = { allocated: 0, spent: 0, reserved: 0, debt: 0, remaining: 0, gated: g.gated };
  return [
    update(
      shardKey(g.scope, g.unit, 0),
      {
        set: { shards: g.to, gated: g.gated, updated_at: g.at },
        // Unsharded, the ledger item's allocation is the budget's: kept for reads from now on.
        ...(g.from === 1 && { copy: { [BUDGET_ALLOCATED]: 'allocated' } }),
      },
      {
        condition: and(
          attr('pk').exists(),
          // A rolling budget's new shards take the period read: not once it rolled over.
          g.period ? attr('period_start').eq(g.period.start) : attr('period_kind').notExists(),
          shardCountIs(g.from),
          // Unsharded, the ledger item has no gate yet: the one it gets must be what its
          // counters say.
          g.from !== 1 && attr('gated').eq(g.gated),
          g.from === 1 &&
            (g.gated
              ? or(attr('debt').gt(0), attr('remaining').lt(0))
              : and(attr('debt').eq(0), attr('remaining').gte(0))),
          g.status === 'ACTIVE'
            ? or(attr('status').notExists(), attr('status').eq(g.status))
            : attr('status').eq(g.status),
        ),
      },
    ),
    ...Array.from({ length: g.to - g.from }, (_, i) =>
      putIfAbsent(shardItem(ref, g.from + i, empty, g.status, g.period)),
    ),
    tenantWithDimensions(g.tenant, [], {
      read: g.sharded,
      scope: g.scope,
      unit: g.unit,
      shards: g.to,
    }),
    auditPut(g.audit),
  ];
}

/** `stale`: the budget's count, gate or status moved since it was read; nothing was written. */
export async function growShards(g: ShardGrowth): Promise<'grown' | 'stale'> {
  const outcome = await transact(shardGrowthTransaction(g), 'settle');
  forgetShards(g);
  return outcome.kind === 'committed' ? 'grown' : 'stale';
}

/**
 * Moves of remaining (with its allocation) out of one shard of a healthy budget into others, in
 * one transaction: the donor must cover them all, and no shard may be gated or in debt (each
 * checks itself alone). The receivers are the cold new shards of a growth, so the transaction
 * meets what a hold on the donor meets. false when a condition failed (nothing was written).
 */
export async function moveFromShard(scope: string, unit: Unit, moves: readonly ShardMove[]) {
  const from = moves[0]?.from;
  if (from === undefined) return true;
  const side = (k: number, d: number, covers: boolean): TransactItem =>
    update(
      shardKey(scope, unit, k),
      { add: { allocated: d, remaining: d } },
      {
        condition: and(
          attr('pk').exists(),
          attr('gated').eq(false),
          attr('debt').eq(0),
          covers && attr('remaining').gte(-d),
        ),
      },
    );
  const total = moves.reduce((sum, m) => sum + m.amount, 0);
  // Settling priority: the donor is the budget's hottest item, and the move is what cools it.
  const outcome = await transact(
    [side(from, -total, true), ...moves.map((m) => side(m.to, m.amount, false))],
    'settle',
  );
  forgetShards({ scope, unit });
  return outcome.kind === 'committed';
}
