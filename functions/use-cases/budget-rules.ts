import type { Unit } from '../domain/amounts.js';
import type { BudgetRecord, BudgetRef } from '../domain/budget.js';
import { DomainError, invalidRequest } from '../domain/errors.js';
import { heaviestPathExtra, MAX_PATH_EXTRA_SHARDS } from '../domain/escrow.js';
import { tenantOfPath } from '../domain/scopes.js';
import { getShardedBudgets, type ShardedBudgets } from '../store/tenants.js';
import { readRecords } from './budget-reader.js';

// What the budget operations of the control plane refuse with, in one place.

export const noTenant = (tenant: string) =>
  new DomainError('NOT_FOUND', `tenant ${tenant} does not exist`, { tenant_id: tenant });

export const noBudget = (scope: string, unit: Unit) =>
  new DomainError('NOT_FOUND', `no budget for ${scope} in ${unit}`, { scope, unit });

/**
 * A budget is CLOSED only by its tenant's close: every change of it is then refused with the
 * reference's 409 TENANT_CLOSED (Rule 2 of its close: a closed tenant's objects are read-only).
 */
export const budgetClosed = (scope: string, unit: Unit) => {
  const tenant = tenantOfPath(scope);
  return new DomainError('TENANT_CLOSED', `tenant ${tenant} is closed: its budgets are read-only`, {
    tenant_id: tenant,
    scope,
    unit,
  });
};

/** Scopes of sharded budgets a tenant item may list (docs/decisions.md § Escrow shards). */
const MAX_SHARDED_MAP_CHARS = 100_000;

/**
 * A sharded budget must leave every path it joins within one transaction's items: an exact
 * write rewrites every shard of every budget on its subject's path (domain/escrow.ts).
 */
function requireRoomForShards(
  read: ShardedBudgets,
  scope: string,
  unit: Unit,
  shards: number,
): void {
  // The map lives on the tenant item (400 KB at most, read every TENANT_STATE_TTL_MS): bounded.
  if (JSON.stringify(read.byUnit).length + scope.length > MAX_SHARDED_MAP_CHARS) {
    throw invalidRequest(
      `shards: the tenant's sharded budgets would name more than ${MAX_SHARDED_MAP_CHARS} characters of scopes`,
      { field: 'shards' },
    );
  }
  const sharded = new Map(Object.entries(read.byUnit[unit] ?? {}));
  const extra = heaviestPathExtra(sharded, scope, shards);
  if (extra > MAX_PATH_EXTRA_SHARDS) {
    throw invalidRequest(
      `shards: the sharded budgets on one path through ${scope} would add ${extra} shards; at most ${MAX_PATH_EXTRA_SHARDS} fit one transaction (docs/scaling.md)`,
      { field: 'shards' },
    );
  }
}

/**
 * The tenant's map of sharded budgets, read, once `scope` in `shards` shards fits every path it
 * joins (404 for a tenant that does not exist): what a sharded budget's creation or growth joins.
 */
export async function shardedBudgetsWithRoom(
  tenant: string,
  scope: string,
  unit: Unit,
  shards: number,
): Promise<ShardedBudgets> {
  const sharded = await getShardedBudgets(tenant);
  if (!sharded) throw noTenant(tenant);
  requireRoomForShards(sharded, scope, unit, shards);
  return sharded;
}

/** The budget of a scope and unit as stored, and refused when CLOSED. */
export async function openBudget(scope: string, unit: BudgetRef['unit']): Promise<BudgetRecord> {
  const [found] = await readRecords([{ scope, unit }]);
  if (!found) throw noBudget(scope, unit);
  if (found.budget.status === 'CLOSED') throw budgetClosed(scope, unit);
  return found;
}
