import type { Amount } from '../domain/amounts.js';
import { budgetAudit } from '../domain/audit.js';
import type { Budget, BudgetRecord, BudgetRef, BudgetStatus } from '../domain/budget.js';
import { DEFAULT_THRESHOLDS } from '../domain/budget-events.js';
import type { BudgetWriter } from '../domain/caller.js';
import type { BudgetCaps } from '../domain/caps.js';
import { DomainError } from '../domain/errors.js';
import { queryLedgerIndex } from '../store/budgets/ledger-index.js';
import { setBudgetStatus, updateBudgetSettings } from '../store/budgets/writes.js';
import { readRecords } from './budget-reader.js';
import { openBudget } from './budget-rules.js';
import { storedThresholds } from './budgets.js';
import { byOperator, type WriteContext, writableScope } from './context.js';
import { readAgain, whileStale } from './guarded-write.js';
import { growBudgetShards } from './shard-growth.js';

// The operator's changes to a budget's settings and state: overdraft limit, caps, thresholds,
// escrow shards, freeze, close. Each is read → change → conditional write with its audit record,
// read again when another change landed between (whileStale). Counters change only by funding.

export interface BudgetChange {
  readonly overdraftLimit?: Amount | undefined;
  /** null removes the caps. */
  readonly caps?: BudgetCaps | null | undefined;
  /** Budget event thresholds in percent; null restores the default. */
  readonly thresholds?: readonly number[] | null | undefined;
  /** More escrow shards (never fewer): see `growBudgetShards`. */
  readonly shards?: number | undefined;
  /** The most one reservation may hold; null removes the cap. */
  readonly maxReservationAmount?: Amount | null | undefined;
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

async function changeBudgetSettings(
  writer: BudgetWriter,
  ref: BudgetRef,
  change: BudgetChange,
  context: WriteContext,
): Promise<BudgetRecord> {
  const { by, scope } = writableScope(writer, ref.scope, context);
  for (const [field, amount] of [
    ['overdraft_limit', change.overdraftLimit],
    ['max_reservation_amount', change.maxReservationAmount],
  ] as const) {
    if (amount && amount.unit !== ref.unit) {
      throw new DomainError(
        'UNIT_MISMATCH',
        `${field} is in ${amount.unit}, the budget in ${ref.unit}`,
        { requested_unit: amount.unit, expected_unit: ref.unit },
      );
    }
  }
  return whileStale(async () => {
    const before = await openBudget(scope, ref.unit);
    const after: Budget = {
      ...before.budget,
      overdraftLimit: change.overdraftLimit?.amount ?? before.budget.overdraftLimit,
      caps: change.caps === undefined ? before.budget.caps : (change.caps ?? undefined),
      thresholds:
        change.thresholds === undefined
          ? before.budget.thresholds
          : storedThresholds(change.thresholds ?? undefined),
      maxReservationAmount:
        change.maxReservationAmount === undefined
          ? before.budget.maxReservationAmount
          : change.maxReservationAmount?.amount,
    };
    const maxHold = change.maxReservationAmount;
    const audit = budgetAudit(
      by,
      'budget.update',
      before.budget,
      after,
      change.caps !== undefined || change.thresholds !== undefined || maxHold !== undefined
        ? {
            ...(change.caps !== undefined && { caps: change.caps ?? 'removed' }),
            ...(change.thresholds !== undefined && {
              thresholds: after.thresholds ?? DEFAULT_THRESHOLDS,
            }),
            ...(maxHold !== undefined && { max_reservation_amount: maxHold?.amount ?? 'removed' }),
          }
        : undefined,
    );
    const at = new Date(context.now).toISOString();
    if ((await updateBudgetSettings(before.budget, after, at, audit)) === 'stale') return readAgain;
    return { ...before, budget: after, updatedAt: at };
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
  context: WriteContext,
): Promise<BudgetRecord> {
  const { by, scope } = writableScope(writer, ref.scope, context);
  const to: BudgetStatus = frozen ? 'FROZEN' : 'ACTIVE';
  return whileStale(async () => {
    const before = await openBudget(scope, ref.unit);
    if (before.budget.status === to) return before;
    const after: Budget = { ...before.budget, status: to };
    const at = new Date(context.now).toISOString();
    const audit = budgetAudit(
      by,
      frozen ? 'budget.freeze' : 'budget.unfreeze',
      before.budget,
      after,
    );
    if ((await setBudgetStatus(before.budget, to, at, audit)) === 'stale') return readAgain;
    return { ...before, budget: after, updatedAt: at };
  });
}

/**
 * Part of a tenant's close: every budget of the tenant CLOSED (audited), permanently. A budget
 * another change moved meanwhile (a freeze, a funding) is read again and closed.
 */
export async function closeBudgetsOfTenant(tenant: string, context: WriteContext) {
  const at = new Date(context.now).toISOString();
  for (let after: string | undefined; ; ) {
    const page = await queryLedgerIndex({
      tenant,
      segment: `tenant:${tenant}`,
      alsoContains: [],
      after,
      limit: 100,
    });
    for (const record of await readRecords(page.entries)) {
      let budget: Budget | undefined = record.budget;
      await whileStale(async () => {
        if (!budget || budget.status === 'CLOSED') return undefined;
        const audit = budgetAudit(byOperator(tenant, context), 'budget.close', budget, {
          ...budget,
          status: 'CLOSED',
        });
        if ((await setBudgetStatus(budget, 'CLOSED', at, audit)) === 'updated') return undefined;
        budget = (await readRecords([budget.ref]))[0]?.budget;
        return readAgain;
      });
    }
    const last = page.entries[page.entries.length - 1];
    if (!page.hasMore || !last) return;
    after = last.position;
  }
}
