import { type Amount, MAX_AMOUNT, type Unit } from '../domain/amounts.js';
import { budgetAudit } from '../domain/audit.js';
import {
  type Budget,
  type BudgetRecord,
  type BudgetRef,
  balanceOf,
  budgetAt,
  type Ledger,
  SINGLE,
  withBalance,
} from '../domain/budget.js';
import { isDefaultThresholds, normalThresholds } from '../domain/budget-events.js';
import type { BudgetWriter } from '../domain/caller.js';
import type { BudgetCaps } from '../domain/caps.js';
import { DomainError, invalidRequest } from '../domain/errors.js';
import { emptyShards, respread } from '../domain/escrow.js';
import { fingerprint } from '../domain/fingerprint.js';
import { applyDelta, type FundOperation, fundChange, inPeriodsOf } from '../domain/ledger.js';
import { type PeriodSpec, periodAt } from '../domain/period.js';
import { tenantClosed } from '../domain/tenant.js';
import { queryClosedPeriods } from '../store/budgets/periods.js';
import { applyFunding, insertLedger } from '../store/budgets/writes.js';
import { budgetSource, readRecords, viewBudgets } from './budget-reader.js';
import { budgetClosed, noBudget, noTenant, shardedBudgetsWithRoom } from './budget-rules.js';
import { type WriteContext, writableScope } from './context.js';
import { guardedWrite, readAgain, whileStale } from './guarded-write.js';
import { outcomeToStore } from './outcomes.js';
import { type Page, type PageRequest, paged } from './pages.js';

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
  /** The most one reservation may hold on it (domain/refusals.ts); absent: no cap. */
  readonly maxReservationAmount?: Amount | undefined;
}

/** Thresholds as stored: sorted, and absent when they are the default. */
export const storedThresholds = (percents: readonly number[] | undefined) =>
  percents && !isDefaultThresholds(percents) ? normalThresholds(percents) : undefined;

/** POST /v1/admin/budgets: a budget whose allocation is spendable at once; audited. */
export async function createBudget(
  writer: BudgetWriter,
  request: BudgetRequest,
  context: WriteContext,
): Promise<BudgetRecord> {
  const { segments, tenant, by, scope } = writableScope(writer, request.scope, context);
  const { now } = context;
  for (const [field, amount] of [
    ['allocated', request.allocated],
    ['overdraft_limit', request.overdraftLimit],
    ['max_reservation_amount', request.maxReservationAmount],
  ] as const) {
    if (amount && amount.unit !== request.unit) {
      throw invalidRequest(`${field}.unit: must equal unit ${request.unit}`, {
        field: `${field}.unit`,
      });
    }
  }
  const shards = request.shards ?? 1;
  const allocated = request.allocated.amount;
  const counters = { allocated, spent: 0, reserved: 0, debt: 0, remaining: allocated };
  const thresholds = storedThresholds(request.thresholds);
  // Split n ways: shard 0 is the ledger item, the remaining spread evenly (domain/escrow.ts).
  const layout = shards > 1 ? respread(emptyShards(shards), counters) : undefined;
  const budget: Budget = {
    ref: { scope, unit: request.unit },
    counters,
    status: 'ACTIVE',
    overdraftLimit: request.overdraftLimit?.amount ?? 0,
    caps: request.caps,
    period: request.period && {
      ...periodAt(request.period, now),
      spec: request.period,
      amount: allocated,
    },
    thresholds,
    maxReservationAmount: request.maxReservationAmount?.amount,
    layout: layout ? { kind: 'sharded', shards: layout, gated: layout[0]?.gated ?? false } : SINGLE,
  };
  const record: BudgetRecord = { tenant, budget, createdAt: new Date(now).toISOString() };
  // The caps are budget configuration the control plane will change: audited from the start.
  const maxHold = request.maxReservationAmount?.amount;
  const audit = budgetAudit(
    by,
    'budget.create',
    undefined,
    budget,
    request.caps || thresholds || maxHold !== undefined
      ? {
          ...request.caps,
          ...(thresholds && { thresholds }),
          ...(maxHold !== undefined && { max_reservation_amount: maxHold }),
        }
      : undefined,
  );
  const inserted = await whileStale(async () => {
    const shardedBudgets =
      shards > 1 ? await shardedBudgetsWithRoom(tenant, scope, request.unit, shards) : undefined;
    const outcome = await insertLedger({ ...record, segments, audit, shardedBudgets });
    return outcome === 'stale' ? readAgain : outcome;
  });
  if (inserted === 'noTenant') throw noTenant(tenant);
  if (inserted === 'tenantClosed') throw tenantClosed(tenant);
  if (inserted === 'duplicate') {
    throw new DomainError(
      'DUPLICATE_RESOURCE',
      `a budget for ${scope} in ${request.unit} already exists`,
      { scope, unit: request.unit },
    );
  }
  return record;
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
  context: WriteContext,
): Promise<Funded> {
  const { tenant, by, scope } = writableScope(writer, request.scope, context);
  const { now } = context;
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
    // Funding a rolling budget funds its current period (the source's repair).
    ...budgetSource({ idempotency, budgets: { scopes: [scope], unit } }, now),
    decide: ({ budgets }) => {
      const budget = budgetAt(budgets, scope, unit);
      // A missing tenant has no budgets either: for the operator, this is the 404 to give.
      if (!budget) throw new DomainError('NOT_FOUND', `no budget for ${scope} in ${unit}`);
      if (budget.status === 'CLOSED') throw budgetClosed(scope, unit);
      const before = balanceOf(budget);
      const [change] = inPeriodsOf(
        [fundChange(before, request.operation, amount.amount, MAX_AMOUNT)],
        budgets,
      );
      if (!change) throw new Error('a funding change');
      const after = applyDelta(before, change.delta);
      const audit = budgetAudit(by, 'budget.fund', budget, withBalance(budget, after), {
        operation: request.operation,
        amount: amount.amount,
        ...(request.reason !== undefined && { reason: request.reason }),
      });
      return { result: { operation: request.operation, before, after }, change, audit, budgets };
    },
    write: ({ result, change, audit, budgets }) =>
      applyFunding(
        change,
        { scope: idempotency, outcome: outcomeToStore(print, result) },
        audit,
        budgets,
      ),
    // A concurrent credit may have brought allocated near the largest amount.
    refusalOf: (refused, { change }) => {
      const allocated = refused[0]?.budget?.counters.allocated ?? 0;
      return change.guard.kind === 'maxAllocated' && allocated > MAX_AMOUNT - amount.amount
        ? invalidRequest(`allocated would exceed the largest amount ${MAX_AMOUNT}`, {
            field: 'amount',
          })
        : undefined;
    },
  });
}

/** GET /v1/admin/budgets/lookup?scope=&unit=: one budget (the operator's, or the key's own tenant's). */
export async function lookupBudget(
  reader: BudgetWriter,
  ref: BudgetRef,
  now: number,
): Promise<BudgetRecord> {
  const scope = writableScope(reader, ref.scope).scope;
  const [found] = await viewBudgets([{ scope, unit: ref.unit }], now);
  if (!found) throw noBudget(scope, ref.unit);
  return found;
}

/**
 * GET /v1/admin/budgets/periods?scope=&unit=: a rolling budget's closed periods, newest first,
 * each with its counters (what was allocated, spent, and is still held there).
 */
export async function listClosedPeriods(
  reader: BudgetWriter,
  ref: BudgetRef & PageRequest,
): Promise<Page<Budget>> {
  const { scope } = writableScope(reader, ref.scope);
  const [found] = await readRecords([{ scope, unit: ref.unit }]);
  if (!found) throw noBudget(scope, ref.unit);
  return paged({ route: 'periods', scope, unit: ref.unit }, ref, async (after) => {
    const page = await queryClosedPeriods({ scope, unit: ref.unit, after, limit: ref.limit });
    return { items: page.periods, nextPosition: page.nextPosition };
  });
}
