import { type Amount, MAX_AMOUNT, type Unit } from '../domain/amounts.js';
import { type Actor, budgetAudit } from '../domain/audit.js';
import {
  DEFAULT_THRESHOLDS,
  isDefaultThresholds,
  normalThresholds,
} from '../domain/budget-events.js';
import { type BudgetWriter, requireOwnTenant } from '../domain/caller.js';
import type { BudgetCaps } from '../domain/caps.js';
import { DomainError, invalidRequest, RetryLaterError } from '../domain/errors.js';
import {
  evenOutMoves,
  heaviestPathExtra,
  MAX_PATH_EXTRA_SHARDS,
  mustGate,
  type ShardMove,
} from '../domain/escrow.js';
import { fingerprint } from '../domain/fingerprint.js';
import {
  applyDelta,
  type BudgetStatus,
  type FundOperation,
  fundChange,
  inPeriods,
  type Ledger,
} from '../domain/ledger.js';
import { type LedgerPeriod, type PeriodSpec, periodAt, rolledOver } from '../domain/period.js';
import { parseScope, segmentText, tenantOfScope } from '../domain/scopes.js';
import {
  applyFunding,
  type BudgetRecord,
  getBudgetRecords,
  getLedgers,
  insertLedger,
  queryClosedPeriods,
  queryLedgerIndex,
  setBudgetStatus,
  updateBudgetSettings,
} from '../store/ledgers.js';
import { growShards, moveFromShard } from '../store/shards.js';
import { readSnapshot } from '../store/snapshot.js';
import { getShardedBudgets, type ShardedBudgets } from '../store/tenants.js';
import { guardedWrite, readAgain, whileStale } from './guarded-write.js';
import { type Page, type PageRequest, paged } from './pages.js';
import { rollOverDue } from './periods.js';

export type { BudgetRecord };

/** Who wrote, for the audit trail and the request it came in. */
export interface WriteContext {
  readonly now: number;
  readonly requestId: string;
}

/** A scope in canonical form: any tenant's for the operator, the key's own tenant's otherwise. */
function writableScope(writer: BudgetWriter, scope: string) {
  const segments = parseScope(scope);
  const tenant = tenantOfScope(segments);
  if (writer.kind === 'tenant') requireOwnTenant(writer, tenant, `scope ${scope}`, { scope });
  const actor: Actor =
    writer.kind === 'admin' ? { kind: 'admin' } : { kind: 'key', keyId: writer.keyId };
  // Stored and looked up in canonical form (standard values lowercase: domain/scopes.ts).
  return { segments, tenant, actor, scope: segments.map(segmentText).join('/') };
}

const noTenant = (tenant: string) =>
  new DomainError('NOT_FOUND', `tenant ${tenant} does not exist`, { tenant_id: tenant });

export interface BudgetRequest {
  readonly scope: string;
  readonly unit: Unit;
  readonly allocated: Amount;
  readonly overdraftLimit?: Amount | undefined;
  /** Escrow shards (domain/escrow.ts); absent or 1: unsharded. */
  readonly shards?: number | undefined;
  /** Soft constraints answered with ALLOW_WITH_CAPS (domain/caps.ts). */
  readonly caps?: BudgetCaps | undefined;
  /** Rolls over by itself: `allocated` is the allocation of every period (domain/period.ts). */
  readonly period?: PeriodSpec | undefined;
  /** Budget event thresholds in percent (domain/budget-events.ts); absent: the default. */
  readonly thresholds?: readonly number[] | undefined;
}
export interface Budget {
  readonly tenant: string;
  readonly ledger: Ledger;
  readonly createdAt: string;
  /** A rolling budget's current period. */
  readonly period?: LedgerPeriod | undefined;
  /** Absent: the default thresholds. */
  readonly thresholds?: readonly number[] | undefined;
}

/** Thresholds as stored: sorted, and absent when they are the default. */
const storedThresholds = (percents: readonly number[] | undefined) =>
  percents && !isDefaultThresholds(percents) ? normalThresholds(percents) : undefined;

/** Scopes of sharded budgets a tenant item may list (docs/decisions.md § Escrow shards). */
const MAX_SHARDED_MAP_CHARS = 100_000;

/**
 * A sharded budget must leave every path it joins within one transaction's items: an exact
 * write rewrites every shard of every budget on its subject's path (domain/escrow.ts).
 */
function requireRoomForShards(read: ShardedBudgets, scope: string, unit: Unit, shards: number) {
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

/** POST /v1/admin/budgets: a ledger whose allocation is spendable at once; audited. */
export async function createBudget(
  writer: BudgetWriter,
  request: BudgetRequest,
  { now, requestId }: WriteContext,
): Promise<Budget> {
  const { segments, tenant, actor, scope } = writableScope(writer, request.scope);
  for (const [field, amount] of [
    ['allocated', request.allocated],
    ['overdraft_limit', request.overdraftLimit],
  ] as const) {
    if (amount && amount.unit !== request.unit) {
      throw invalidRequest(`${field}.unit: must equal unit ${request.unit}`, {
        field: `${field}.unit`,
      });
    }
  }
  const ledger: Ledger = {
    scope,
    unit: request.unit,
    allocated: request.allocated.amount,
    spent: 0,
    reserved: 0,
    debt: 0,
    overdraftLimit: request.overdraftLimit?.amount ?? 0,
    remaining: request.allocated.amount,
  };
  if (request.period && (request.shards ?? 1) > 1) {
    throw invalidRequest('a rolling budget (period) cannot be split into shards', {
      field: 'shards',
    });
  }
  const period: LedgerPeriod | undefined = request.period && {
    ...periodAt(request.period, now),
    spec: request.period,
    amount: request.allocated.amount,
  };
  const thresholds = storedThresholds(request.thresholds);
  const budget: Budget = {
    tenant,
    ledger,
    createdAt: new Date(now).toISOString(),
    period,
    ...(thresholds && { thresholds }),
  };
  // The caps are budget configuration the control plane will change: audited from the start.
  const audit = budgetAudit(
    { tenant, actor, requestId, atMs: now },
    'budget.create',
    undefined,
    ledger,
    request.caps || thresholds ? { ...request.caps, ...(thresholds && { thresholds }) } : undefined,
  );
  const shards = request.shards ?? 1;
  const inserted = await whileStale(async () => {
    const shardedBudgets = shards > 1 ? await getShardedBudgets(tenant) : undefined;
    if (shards > 1 && !shardedBudgets) return 'noTenant' as const;
    if (shardedBudgets) requireRoomForShards(shardedBudgets, scope, request.unit, shards);
    const outcome = await insertLedger({
      ...budget,
      segments,
      audit,
      shards: request.shards,
      caps: request.caps,
      period,
      thresholds,
      shardedBudgets,
    });
    return outcome === 'stale' ? readAgain : outcome;
  });
  if (inserted === 'noTenant') throw noTenant(tenant);
  if (inserted === 'duplicate') {
    throw new DomainError(
      'DUPLICATE_RESOURCE',
      `a budget for ${scope} in ${request.unit} already exists`,
      { scope, unit: request.unit },
    );
  }
  return budget;
}

export interface FundRequest {
  readonly scope: string;
  readonly unit: Unit;
  readonly operation: FundOperation;
  readonly amount: Amount;
  readonly idempotencyKey: string;
  readonly reason?: string | undefined;
}
export interface Funded {
  readonly operation: FundOperation;
  readonly before: Ledger;
  readonly after: Ledger;
}

/** POST /v1/admin/budgets/{scope}/{unit}/fund: CREDIT, RESET or REPAY_DEBT, idempotent, audited. */
export function fundBudget(
  writer: BudgetWriter,
  request: FundRequest,
  { now, requestId }: WriteContext,
): Promise<Funded> {
  const { tenant, actor, scope } = writableScope(writer, request.scope);
  if (request.amount.unit !== request.unit) {
    throw new DomainError(
      'UNIT_MISMATCH',
      `amount is in ${request.amount.unit}, the budget in ${request.unit}`,
      { requested_unit: request.amount.unit, expected_unit: request.unit },
    );
  }
  const idempotency = { tenant, operation: 'fund', key: request.idempotencyKey };
  const print = fingerprint(request);
  const { unit, amount } = request;
  return guardedWrite({
    name: 'funding',
    fingerprint: print,
    read: (atomic) => readSnapshot({ idempotency, ledgers: { scopes: [scope], unit }, atomic }),
    decide: async ({ ledgers, layouts, periods }) => {
      const ledger = ledgers.get(scope);
      // A missing tenant has no budgets either: for the operator, this is the 404 to give.
      if (!ledger) throw new DomainError('NOT_FOUND', `no budget for ${scope} in ${unit}`);
      if (ledger.status === 'CLOSED') throw budgetClosed(scope, unit);
      // Funding a rolling budget funds its current period.
      if (await rollOverDue({ ledgers, periods }, now)) return readAgain;
      const [change] = inPeriods(
        [fundChange(ledger, request.operation, amount.amount, MAX_AMOUNT)],
        periods,
      );
      if (!change) throw new Error('a funding change');
      const result: Funded = {
        operation: request.operation,
        before: ledger,
        after: applyDelta(ledger, change.delta),
      };
      return { result, change, layouts };
    },
    write: ({ result, change, layouts }) =>
      applyFunding(
        change,
        { scope: idempotency, outcome: { fingerprint: print, result } },
        budgetAudit(
          { tenant, actor, requestId, atMs: now },
          'budget.fund',
          result.before,
          result.after,
          {
            operation: request.operation,
            amount: amount.amount,
            ...(request.reason !== undefined && { reason: request.reason }),
          },
        ),
        layouts,
      ),
    // A concurrent credit may have brought allocated near the largest amount.
    refusalOf: (refused, { change }) => {
      const allocated = refused[0]?.ledger?.allocated ?? 0;
      return change.guard.kind === 'maxAllocated' && allocated > MAX_AMOUNT - amount.amount
        ? invalidRequest(`allocated would exceed the largest amount ${MAX_AMOUNT}`, {
            field: 'amount',
          })
        : undefined;
    },
  });
}

/** A budget named by its scope and unit (the query parameters of the control plane). */
export interface BudgetRef {
  readonly scope: string;
  readonly unit: Unit;
}

const noBudget = (scope: string, unit: Unit) =>
  new DomainError('NOT_FOUND', `no budget for ${scope} in ${unit}`, { scope, unit });

const budgetClosed = (scope: string, unit: Unit) =>
  new DomainError('BUDGET_CLOSED', `the budget of ${scope} in ${unit} is closed`, { scope, unit });

async function readBudget(scope: string, unit: Unit): Promise<BudgetRecord> {
  const [found] = await getBudgetRecords([{ scope, unit }]);
  if (!found) throw noBudget(scope, unit);
  return found;
}

/** A rolling budget read after its period ended is shown as its next operation will find it. */
export function currentRecord(b: BudgetRecord, now: number): BudgetRecord {
  if (!b.period) return b;
  return { ...b, ...rolledOver(b.ledger, b.period, now) };
}

/** GET /v1/admin/budgets/lookup?scope=&unit=: one budget (the operator's, or the key's own tenant's). */
export async function lookupBudget(
  reader: BudgetWriter,
  ref: BudgetRef,
  now: number,
): Promise<BudgetRecord> {
  return currentRecord(await readBudget(writableScope(reader, ref.scope).scope, ref.unit), now);
}

export interface BudgetFilters extends PageRequest {
  readonly tenantId?: string | undefined;
  readonly scopePrefix?: string | undefined;
  readonly unit?: Unit | undefined;
  readonly status?: BudgetStatus | undefined;
}

/**
 * GET /v1/admin/budgets: one tenant's budgets by scope, filtered. The operator names the tenant
 * (budgets are indexed per tenant); a key lists its own.
 */
export function listBudgets(
  reader: BudgetWriter,
  q: BudgetFilters,
  now: number,
): Promise<Page<BudgetRecord>> {
  if (reader.kind === 'tenant' && q.tenantId !== undefined) {
    requireOwnTenant(reader, q.tenantId, `tenant '${q.tenantId}'`, { tenant_id: q.tenantId });
  }
  const tenant = reader.kind === 'tenant' ? reader.tenant : q.tenantId;
  if (tenant === undefined) {
    throw invalidRequest('tenant_id is required with the admin key', { field: 'tenant_id' });
  }
  const { cursor: _cursor, limit, ...filters } = q;
  return paged({ route: 'budgets', ...filters, tenantId: tenant }, q, async (after) => {
    const page = await queryLedgerIndex({
      tenant,
      segment: `tenant:${tenant}`,
      alsoContains: [],
      scopePrefix: q.scopePrefix,
      unit: q.unit,
      after,
      limit,
    });
    const records = (await getBudgetRecords(page.entries)).map((b) => currentRecord(b, now));
    const last = page.entries[page.entries.length - 1];
    return {
      items: records.filter(
        (b) => q.status === undefined || (b.ledger.status ?? 'ACTIVE') === q.status,
      ),
      nextPosition: page.hasMore && last ? last.position : undefined,
    };
  });
}

export interface BudgetChange {
  readonly overdraftLimit?: Amount | undefined;
  /** null removes the caps. */
  readonly caps?: BudgetCaps | null | undefined;
  /** Budget event thresholds in percent; null restores the default. */
  readonly thresholds?: readonly number[] | null | undefined;
  /** More escrow shards (never fewer): see `growBudgetShards`. */
  readonly shards?: number | undefined;
}

/**
 * PATCH /v1/admin/budgets?scope=&unit=: the overdraft limit and the caps, audited. A limit
 * lowered below the debt puts the budget over its limit (SPEC rule 4: no new reservations until
 * the debt is repaid); counters change only by funding.
 */
export async function changeBudget(
  writer: BudgetWriter,
  ref: BudgetRef,
  change: BudgetChange,
  context: WriteContext,
): Promise<BudgetRecord> {
  // The shards come alone (http/schemas/admin.ts): each change is its own transaction and record.
  return change.shards === undefined
    ? changeBudgetSettings(writer, ref, change, context)
    : growBudgetShards(writer, ref, change.shards, context);
}

/**
 * PATCH `shards`: a busy budget split further, while it serves. The count rises on shard 0 and
 * the new shards are put empty in one transaction, with the tenant's map of sharded budgets (the
 * path rule) and the audit record; then the remaining is evened out by moves of two shards each
 * (`evenOutMoves`), which a busy budget lets through where one rewrite of every shard would keep
 * losing to holds. A move that fails (the budget moved on) is left to the next exact write,
 * which lays every shard out afresh. Never fewer shards: holds live on their shards until
 * settled. Not on a rolling budget, as at creation.
 */
async function growBudgetShards(
  writer: BudgetWriter,
  ref: BudgetRef,
  to: number,
  { now, requestId }: WriteContext,
): Promise<BudgetRecord> {
  const { tenant, actor, scope } = writableScope(writer, ref.scope);
  const grown = await whileStale(async () => {
    const before = await readBudget(scope, ref.unit);
    if (before.ledger.status === 'CLOSED') throw budgetClosed(scope, ref.unit);
    if (to === before.shards) return before;
    if (before.period) {
      throw invalidRequest('a rolling budget (period) cannot be split into shards', {
        field: 'shards',
      });
    }
    if (to < before.shards) {
      throw invalidRequest(
        `shards: ${scope} has ${before.shards}; a budget's shards can only grow (its holds live on them)`,
        { field: 'shards' },
      );
    }
    const sharded = await getShardedBudgets(tenant);
    if (!sharded) throw noTenant(tenant);
    requireRoomForShards(sharded, scope, ref.unit, to);
    const at = new Date(now).toISOString();
    const audit = budgetAudit(
      { tenant, actor, requestId, atMs: now },
      'budget.update',
      before.ledger,
      before.ledger,
      { shards: { from: before.shards, to } },
    );
    const outcome = await growShards({
      tenant,
      scope,
      unit: ref.unit,
      from: before.shards,
      to,
      // Unsharded, the ledger item has no gate yet: the one its counters call for.
      gated: before.shards > 1 ? before.gated : mustGate(before.ledger),
      status: before.ledger.status === 'FROZEN' ? 'FROZEN' : 'ACTIVE',
      at,
      sharded,
      audit,
    });
    return outcome === 'stale' ? readAgain : { ...before, shards: to, updatedAt: at };
  });
  // Also when the count was already `to`: a PATCH sent again finishes an interrupted evening out.
  if (grown.shards === to) await evenOutShards(scope, ref.unit);
  return grown;
}

/** How long a PATCH `shards` spends evening out (its function times out at 10 s). */
const EVEN_OUT_MS = 3_000;

/**
 * Best effort, one pass, one transaction per donor shard (it and the shards it fills, which are
 * cold): a busy budget lets that through as it lets a hold through. Stops when busy past the
 * retries or past EVEN_OUT_MS; the budget is exact as it stands, only less evenly laid out, and
 * the same PATCH sent again (same count) carries on from there.
 */
async function evenOutShards(scope: string, unit: Unit): Promise<void> {
  const deadline = performance.now() + EVEN_OUT_MS;
  const layout = (await getLedgers([scope], unit)).layouts.get(scope);
  if (!layout) return;
  const byDonor = new Map<number, ShardMove[]>();
  for (const m of evenOutMoves(layout.shards))
    byDonor.set(m.from, [...(byDonor.get(m.from) ?? []), m]);
  for (const moves of byDonor.values()) {
    if (performance.now() > deadline) return;
    try {
      await moveFromShard(scope, unit, moves);
    } catch (error) {
      if (!(error instanceof RetryLaterError)) throw error;
      return;
    }
  }
}

async function changeBudgetSettings(
  writer: BudgetWriter,
  ref: BudgetRef,
  change: BudgetChange,
  { now, requestId }: WriteContext,
): Promise<BudgetRecord> {
  const { tenant, actor, scope } = writableScope(writer, ref.scope);
  if (change.overdraftLimit && change.overdraftLimit.unit !== ref.unit) {
    throw new DomainError(
      'UNIT_MISMATCH',
      `overdraft_limit is in ${change.overdraftLimit.unit}, the budget in ${ref.unit}`,
      { requested_unit: change.overdraftLimit.unit, expected_unit: ref.unit },
    );
  }
  return whileStale(async () => {
    const before = await readBudget(scope, ref.unit);
    if (before.ledger.status === 'CLOSED') throw budgetClosed(scope, ref.unit);
    const settings = {
      overdraftLimit: change.overdraftLimit?.amount ?? before.ledger.overdraftLimit,
      caps: change.caps === undefined ? before.caps : (change.caps ?? undefined),
      thresholds:
        change.thresholds === undefined
          ? before.thresholds
          : storedThresholds(change.thresholds ?? undefined),
    };
    const after = { ...before.ledger, overdraftLimit: settings.overdraftLimit };
    const audit = budgetAudit(
      { tenant, actor, requestId, atMs: now },
      'budget.update',
      before.ledger,
      after,
      change.caps !== undefined || change.thresholds !== undefined
        ? {
            ...(change.caps !== undefined && { caps: change.caps ?? 'removed' }),
            ...(change.thresholds !== undefined && {
              thresholds: settings.thresholds ?? DEFAULT_THRESHOLDS,
            }),
          }
        : undefined,
    );
    const at = new Date(now).toISOString();
    if ((await updateBudgetSettings(before, settings, at, audit)) === 'stale') return readAgain;
    return {
      ...before,
      ledger: after,
      caps: settings.caps,
      thresholds: settings.thresholds,
      updatedAt: at,
    };
  });
}

/**
 * POST /v1/admin/budgets/freeze and /unfreeze: a frozen budget refuses new reservations and
 * events (409 BUDGET_FROZEN; DENY on decide and dry runs) and still settles the open ones.
 * Freezing a frozen budget answers it unchanged.
 */
export async function setBudgetFrozen(
  writer: BudgetWriter,
  ref: BudgetRef,
  frozen: boolean,
  { now, requestId }: WriteContext,
): Promise<BudgetRecord> {
  const { tenant, actor, scope } = writableScope(writer, ref.scope);
  const to = frozen ? 'FROZEN' : 'ACTIVE';
  return whileStale(async () => {
    const before = await readBudget(scope, ref.unit);
    if (before.ledger.status === 'CLOSED') throw budgetClosed(scope, ref.unit);
    if ((before.ledger.status ?? 'ACTIVE') === to) return before;
    const { status: _was, ...ledger } = before.ledger;
    const after: Ledger = frozen ? { ...ledger, status: 'FROZEN' } : ledger;
    const at = new Date(now).toISOString();
    const audit = budgetAudit(
      { tenant, actor, requestId, atMs: now },
      frozen ? 'budget.freeze' : 'budget.unfreeze',
      before.ledger,
      after,
    );
    if ((await setBudgetStatus(before, to, at, audit)) === 'stale') return readAgain;
    return { ...before, ledger: after, updatedAt: at };
  });
}

/** Part of a tenant's close: every budget of the tenant CLOSED (audited), permanently. */
export async function closeBudgetsOfTenant(tenant: string, { now, requestId }: WriteContext) {
  const at = new Date(now).toISOString();
  for (let after: string | undefined; ; ) {
    const page = await queryLedgerIndex({
      tenant,
      segment: `tenant:${tenant}`,
      alsoContains: [],
      after,
      limit: 100,
    });
    for (const before of await getBudgetRecords(page.entries)) {
      if (before.ledger.status === 'CLOSED') continue;
      const audit = budgetAudit(
        { tenant, actor: { kind: 'admin' }, requestId, atMs: now },
        'budget.close',
        before.ledger,
        { ...before.ledger, status: 'CLOSED' },
      );
      // A concurrent freeze may win the race: the next close of the tenant finishes it.
      await setBudgetStatus(before, 'CLOSED', at, audit);
    }
    const last = page.entries[page.entries.length - 1];
    if (!page.hasMore || !last) return;
    after = last.position;
  }
}

/**
 * GET /v1/admin/budgets/periods?scope=&unit=: a rolling budget's closed periods, newest first,
 * each with its ledger (what was allocated, spent, and is still held there).
 */
export async function listClosedPeriods(
  reader: BudgetWriter,
  ref: BudgetRef & PageRequest,
): Promise<Page<{ ledger: Ledger; period: LedgerPeriod }>> {
  const { scope } = writableScope(reader, ref.scope);
  await readBudget(scope, ref.unit);
  return paged({ route: 'periods', scope, unit: ref.unit }, ref, async (after) => {
    const page = await queryClosedPeriods({ scope, unit: ref.unit, after, limit: ref.limit });
    return { items: page.periods, nextPosition: page.nextPosition };
  });
}
