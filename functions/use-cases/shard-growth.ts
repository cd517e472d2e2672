import { serverNow } from '../clock.js';
import { config } from '../config/settings.js';
import { timeLeftMs } from '../deadline.js';
import { type AuditContext, budgetAudit } from '../domain/audit.js';
import { type BudgetRecord, type BudgetRef, budgetKey, shardCount } from '../domain/budget.js';
import type { BudgetWriter } from '../domain/caller.js';
import { invalidRequest, RetryLaterError } from '../domain/errors.js';
import {
  emptyShards,
  evenOutMoves,
  grownShardCount,
  growthFactor,
  mostShardsOnPaths,
  mustGate,
  runningLow,
  type Shard,
  type ShardMove,
} from '../domain/escrow.js';
import { tenantOfPath } from '../domain/scopes.js';
import { log } from '../log.js';
import { growShards, moveFromShard } from '../store/budgets/growth.js';
import { anyHot, takeHotBudgets } from '../store/budgets/heat.js';
import { getShardedBudgets, type ShardedBudgets } from '../store/tenants.js';
import { currentInvocation } from '../telemetry/invocation.js';
import { readBudgets, readRecords } from './budget-reader.js';
import { openBudget, shardedBudgetsWithRoom } from './budget-rules.js';
import { type WriteContext, writableScope } from './context.js';
import { readAgain, whileStale } from './guarded-write.js';

// A budget given more escrow shards while it serves (docs/decisions.md § Escrow shards): by the
// operator (PATCH `shards`), or by the system when its items keep meeting transaction conflicts
// (AUTO_SHARDS_*). One transaction raises the count on shard 0 and puts the new shards empty,
// with the tenant's map of sharded budgets (the path rule) and the audit record; then the
// remaining is evened out by moves of two shards each (`evenOutMoves`), which a busy budget
// lets through where one rewrite of every shard would keep losing to holds. A move that fails
// (the budget moved on) is left to the next exact write, which lays every shard out afresh.
// Never fewer shards: holds live on their shards until settled.

/**
 * PATCH `shards`: the operator's count, refused (400) below the current one or past the path
 * rule; a rolling budget too (its shards carry its period and roll over together).
 */
export async function growBudgetShards(
  writer: BudgetWriter,
  ref: BudgetRef,
  to: number,
  context: WriteContext,
): Promise<BudgetRecord> {
  const { tenant, by, scope } = writableScope(writer, ref.scope, context);
  const grown = await whileStale(async () => {
    const before = await openBudget(scope, ref.unit);
    const from = shardCount(before.budget);
    if (to === from) return before;
    if (to < from) {
      throw invalidRequest(
        `shards: ${scope} has ${from}; a budget's shards can only grow (its holds live on them)`,
        { field: 'shards' },
      );
    }
    const sharded = await shardedBudgetsWithRoom(tenant, scope, ref.unit, to);
    return writeGrowth(before, to, sharded, by, { shards: { from, to } });
  });
  // Also when the count was already `to`: a PATCH sent again finishes an interrupted evening out.
  if (shardCount(grown.budget) === to) await evenOutShards(scope, ref.unit);
  return grown;
}

/** The growth's transaction; readAgain when the budget moved since it was read. */
async function writeGrowth(
  before: BudgetRecord,
  to: number,
  sharded: ShardedBudgets,
  by: AuditContext,
  detail: Readonly<Record<string, unknown>>,
): Promise<BudgetRecord | typeof readAgain> {
  const { budget } = before;
  const from = shardCount(budget);
  const at = new Date(by.atMs).toISOString();
  // Unsharded, the ledger item has no gate yet: the one its counters call for.
  const gated = budget.layout.kind === 'sharded' ? budget.layout.gated : mustGate(budget.counters);
  const outcome = await growShards({
    tenant: before.tenant,
    scope: budget.ref.scope,
    unit: budget.ref.unit,
    from,
    to,
    gated,
    status: budget.status === 'FROZEN' ? 'FROZEN' : 'ACTIVE',
    period: budget.period,
    at,
    sharded,
    audit: budgetAudit(by, 'budget.update', budget, budget, detail),
  });
  if (outcome === 'stale') return readAgain;
  const shards: Shard[] = [
    ...(budget.layout.kind === 'sharded' ? budget.layout.shards : [{ ...budget.counters, gated }]),
    ...emptyShards(to - from).map((s) => ({ ...s, gated })),
  ];
  return {
    ...before,
    budget: { ...budget, layout: { kind: 'sharded', shards, gated } },
    updatedAt: at,
  };
}

/** How long a growth spends evening out at most (a function times out at 10 s). */
const EVEN_OUT_MS = 3_000;

/**
 * Best effort, one pass, one transaction per donor shard (it and the shards it fills, which are
 * cold): a busy budget lets that through as it lets a hold through. Stops when busy past the
 * retries, past EVEN_OUT_MS or near the request's deadline; the budget is exact as it stands,
 * only less evenly laid out, and the same PATCH sent again (same count) carries on from there.
 */
async function evenOutShards(scope: string, unit: BudgetRef['unit']): Promise<void> {
  const until = performance.now() + Math.min(EVEN_OUT_MS, timeLeftMs() / 2);
  const { budgets } = await readBudgets({ budgets: { scopes: [scope], unit } });
  const layout = [...budgets.values()][0]?.layout;
  if (layout?.kind !== 'sharded') return;
  const byDonor = new Map<number, ShardMove[]>();
  for (const m of evenOutMoves(layout.shards))
    byDonor.set(m.from, [...(byDonor.get(m.from) ?? []), m]);
  let stopped: string | undefined;
  for (const moves of byDonor.values()) {
    if (performance.now() > until) {
      stopped = 'out of time';
      break;
    }
    try {
      if (!(await moveFromShard(scope, unit, moves))) stopped = 'the budget moved';
    } catch (error) {
      if (!(error instanceof RetryLaterError)) throw error;
      stopped = 'busy';
      break;
    }
  }
  const key = budgetKey({ scope, unit });
  if (stopped === undefined) unevened.delete(key);
  else {
    unevened.add(key);
    log.warn('evening out of escrow shards stopped short', { scope, unit, why: stopped });
  }
}

/**
 * Budgets whose evening out stopped short in this process: their new shards may still be
 * empty (they take no holds), so the budget looks as if it ran low (its remaining on a few
 * shards) and would neither grow nor be evened out again; found hot, it is evened out first.
 */
const unevened = new Set<string>();

/** Time a request keeps for its own answer: no growth is started with less left. */
const GROWTH_NEEDS_MS = 1_000;

/**
 * Budgets that shard themselves: every budget this process found hot (store/budgets/heat.ts:
 * AUTO_SHARDS_CONFLICTS conflicts within AUTO_SHARDS_WINDOW_MS, or a write turned away busy)
 * grows to twice its shards, at most AUTO_SHARDS_MAX and what the path rule leaves, audited as
 * the system's change in this request (`detail.reason: contention`). Not a budget running low
 * (its remaining gathered on a few shards: more would only be spread thin), nor a closed one.
 * Best effort, after the request's own write: it never changes the request's answer.
 */
export async function growHotBudgets(): Promise<void> {
  if (!anyHot()) return;
  const requestId = currentInvocation()?.requestId ?? '';
  for (const { ref, share } of takeHotBudgets()) {
    if (timeLeftMs() < GROWTH_NEEDS_MS) return;
    try {
      if (unevened.has(budgetKey(ref))) {
        await evenOutShards(ref.scope, ref.unit);
        continue;
      }
      const factor = growthFactor(share, config.AUTO_SHARDS_CONFLICT_PERCENT / 100);
      if ((await growBySystem(ref, requestId, factor)) === 'at ceiling')
        // Still hot at its ceiling: the evening out of its last growth may have stopped short
        // (busy), leaving shards empty that take no holds; carry it on.
        await evenOutShards(ref.scope, ref.unit);
    } catch (error) {
      log.warn('automatic shard growth not done', { error, scope: ref.scope, unit: ref.unit });
    }
  }
}

async function growBySystem(
  ref: BudgetRef,
  requestId: string,
  factor: number,
): Promise<'grown' | 'at ceiling' | 'not grown'> {
  const tenant = tenantOfPath(ref.scope);
  let atCeiling = false;
  const grown = await whileStale(async () => {
    atCeiling = false;
    const [before] = await readRecords([ref]);
    if (!before || before.budget.status === 'CLOSED') return undefined;
    const { budget } = before;
    const from = shardCount(budget);
    if (
      budget.layout.kind === 'sharded'
        ? runningLow(budget.layout.shards)
        : budget.counters.remaining <= 0
    )
      return undefined;
    const sharded = await getShardedBudgets(tenant);
    if (!sharded) return undefined;
    const onPaths = new Map(Object.entries(sharded.byUnit[ref.unit] ?? {}));
    const to = grownShardCount(
      from,
      config.AUTO_SHARDS_MAX,
      mostShardsOnPaths(onPaths, ref.scope),
      factor,
    );
    atCeiling = to === undefined && from > 1;
    if (to === undefined) return undefined;
    const by: AuditContext = { tenant, actor: { kind: 'system' }, requestId, atMs: serverNow() };
    return writeGrowth(before, to, sharded, by, { shards: { from, to }, reason: 'contention' });
  });
  if (!grown) return atCeiling ? 'at ceiling' : 'not grown';
  log.info('budget grew its escrow shards under contention', {
    scope: ref.scope,
    unit: ref.unit,
    shards: shardCount(grown.budget),
  });
  await evenOutShards(ref.scope, ref.unit);
  return 'grown';
}
