import type { Amount } from '../domain/amounts.js';
import { type BudgetRecord, budgetKey } from '../domain/budget.js';
import type { Credential } from '../domain/caller.js';
import { DomainError, invalidRequest } from '../domain/errors.js';
import { derivedId, fingerprint } from '../domain/fingerprint.js';
import type { FundOperation } from '../domain/ledger.js';
import type { Tenant, TenantStatus } from '../domain/tenant.js';
import { putIdempotencyRecord } from '../store/idempotency.js';
import { readSnapshot } from '../store/snapshot.js';
import { queryTenants } from '../store/tenants.js';
import { type BudgetFilters, listBudgets } from './budget-listing.js';
import { setBudgetFrozen } from './budget-settings.js';
import { fundBudget } from './budgets.js';
import type { WriteContext } from './context.js';
import { outcomeToStore, replayOf } from './outcomes.js';
import { allOf } from './pages.js';
import { changeTenant } from './tenants.js';

// POST /v1/admin/tenants/bulk-action and /v1/admin/budgets/bulk-action (issue 27 point 3): one
// action on every row a filter matches, with the reference's safety gates — at most MAX_ROWS
// rows (400 LIMIT_EXCEEDED), the operator's expected_count (409 COUNT_MISMATCH, nothing written)
// — and its per-row outcomes. Each row is the single operation's own change, audited as it is
// (with the bulk action and key in the record's detail); a retry of the request answers the
// first answer, and a retry after an interruption does each row at most once.

/** The reference's hard cap: more matching rows are refused, never half done. */
export const MAX_ROWS = 500;
/** Rows changed at once. */
const PARALLEL_ROWS = 8;

export interface RowOutcome {
  readonly id: string;
  readonly errorCode?: string | undefined;
  readonly message?: string | undefined;
  readonly reason?: string | undefined;
}

export interface BulkResult<A extends string> {
  readonly action: A;
  readonly totalMatched: number;
  readonly succeeded: readonly RowOutcome[];
  readonly failed: readonly RowOutcome[];
  readonly skipped: readonly RowOutcome[];
  readonly idempotencyKey: string;
}

type Row = { readonly kind: 'succeeded' | 'skipped' | 'failed' } & RowOutcome;

const ALREADY = 'ALREADY_IN_TARGET_STATE';

/** A row's refusal as the reference's row vocabulary names it. */
function failedRow(id: string, error: unknown): Row {
  if (!(error instanceof DomainError)) throw error;
  const code =
    error.code === 'BUDGET_EXCEEDED' || error.code === 'NOT_FOUND'
      ? error.code
      : error.code === 'FORBIDDEN'
        ? 'PERMISSION_DENIED'
        : 'INVALID_TRANSITION';
  return { kind: 'failed', id, errorCode: code, message: error.message };
}

/**
 * The gates and the replay around one bulk action: the stored answer of an earlier request with
 * this key (409 on another payload), the row cap and the expected count, then the rows, a few at
 * a time, and the answer stored for the next retry.
 */
async function bulkAction<A extends string, T>(
  q: {
    readonly action: A;
    readonly idempotencyKey: string;
    readonly expectedCount?: number | undefined;
    readonly scope: { readonly tenant: string; readonly operation: string };
    readonly request: unknown;
    readonly now: number;
  },
  matched: () => Promise<readonly T[]>,
  apply: (row: T) => Promise<Row>,
): Promise<BulkResult<A>> {
  const idempotency = { ...q.scope, key: q.idempotencyKey };
  const print = fingerprint(q.request);
  const earlier = await readSnapshot({ idempotency });
  if (earlier.replay) return replayOf<BulkResult<A>>(earlier.replay, print);
  const rows = await matched();
  if (rows.length > MAX_ROWS) {
    throw new DomainError(
      'LIMIT_EXCEEDED',
      `the filter matches ${rows.length} rows, more than the ${MAX_ROWS} one request may change: narrow it`,
      { total_matched: rows.length, max_rows: MAX_ROWS },
    );
  }
  if (q.expectedCount !== undefined && q.expectedCount !== rows.length) {
    throw new DomainError(
      'COUNT_MISMATCH',
      `the filter matches ${rows.length} rows, not the ${q.expectedCount} expected: nothing was changed`,
      { total_matched: rows.length, expected_count: q.expectedCount },
    );
  }
  const done: Row[] = [];
  for (let i = 0; i < rows.length; i += PARALLEL_ROWS) {
    done.push(...(await Promise.all(rows.slice(i, i + PARALLEL_ROWS).map(apply))));
  }
  const of = (kind: Row['kind']) =>
    done.filter((r) => r.kind === kind).map(({ kind: _, ...row }) => row);
  const result: BulkResult<A> = {
    action: q.action,
    totalMatched: rows.length,
    succeeded: of('succeeded'),
    failed: of('failed'),
    skipped: of('skipped'),
    idempotencyKey: q.idempotencyKey,
  };
  const stored = await putIdempotencyRecord(idempotency, outcomeToStore(print, result), q.now);
  // A concurrent duplicate stored first: its answer is the answer (its rows were these rows).
  return stored.kind === 'duplicate' ? replayOf<BulkResult<A>>(stored.stored, print) : result;
}

// ---- tenants --------------------------------------------------------------------------------

export type TenantBulkAction = 'SUSPEND' | 'REACTIVATE' | 'CLOSE';

export interface TenantBulkRequest {
  readonly filter: {
    readonly status?: TenantStatus | undefined;
    readonly parentTenantId?: string | undefined;
    readonly search?: string | undefined;
  };
  readonly action: TenantBulkAction;
  readonly expectedCount?: number | undefined;
  readonly idempotencyKey: string;
}

const TARGET: Record<TenantBulkAction, TenantStatus> = {
  SUSPEND: 'SUSPENDED',
  REACTIVATE: 'ACTIVE',
  CLOSE: 'CLOSED',
};

/**
 * SUSPEND (ACTIVE → SUSPENDED), REACTIVATE (SUSPENDED → ACTIVE) or CLOSE (the whole close,
 * cascade included) every tenant the filter matches: one audited update per changed tenant.
 */
export function bulkActionTenants(
  q: TenantBulkRequest,
  context: WriteContext,
): Promise<BulkResult<TenantBulkAction>> {
  const needle = q.filter.search?.toLowerCase();
  const matches = (t: Tenant) =>
    (q.filter.parentTenantId === undefined || t.parentTenantId === q.filter.parentTenantId) &&
    (needle === undefined ||
      t.tenantId.toLowerCase().includes(needle) ||
      t.name.toLowerCase().includes(needle));
  const target = TARGET[q.action];
  const detail = { bulk_action: q.action, bulk_idempotency_key: q.idempotencyKey };
  return bulkAction(
    {
      action: q.action,
      idempotencyKey: q.idempotencyKey,
      expectedCount: q.expectedCount,
      scope: { tenant: '__admin__', operation: 'tenants-bulk-action' },
      request: q,
      now: context.now,
    },
    () =>
      allOf(async (after) => {
        const page = await queryTenants({ status: q.filter.status, matches, after, limit: 1_000 });
        return { items: page.tenants, nextPosition: page.nextPosition };
      }, 'tenants'),
    async (t): Promise<Row> => {
      const id = t.tenantId;
      if (t.status === 'CLOSED' && target !== 'CLOSED') {
        return {
          kind: 'failed',
          id,
          errorCode: 'INVALID_TRANSITION',
          message: `tenant ${id} is closed`,
        };
      }
      // Closing again still drives the cascade to its end (a close interrupted before).
      if (t.status === target && target !== 'CLOSED')
        return { kind: 'skipped', id, reason: ALREADY };
      try {
        await changeTenant(id, { status: target }, { ...context, detail });
        return t.status === target
          ? { kind: 'skipped', id, reason: ALREADY }
          : { kind: 'succeeded', id };
      } catch (error) {
        return failedRow(id, error);
      }
    },
  );
}

// ---- budgets --------------------------------------------------------------------------------

export type BudgetBulkAction = FundOperation | 'FREEZE' | 'UNFREEZE';

export interface BudgetBulkRequest {
  readonly filter: Omit<BudgetFilters, 'limit' | 'cursor' | 'sortBy' | 'sortDir'> & {
    readonly tenantId: string;
  };
  readonly action: BudgetBulkAction;
  readonly amount?: Amount | undefined;
  readonly reason?: string | undefined;
  readonly expectedCount?: number | undefined;
  readonly idempotencyKey: string;
}

/**
 * One funding operation (each row its own idempotent funding, keyed by the bulk key and the
 * ledger: a retry replays it) or a freeze or unfreeze on every budget of one tenant the filter
 * matches. A row the action cannot change is failed or skipped, never the request.
 */
export function bulkActionBudgets(
  writer: Credential,
  q: BudgetBulkRequest,
  context: WriteContext,
): Promise<BulkResult<BudgetBulkAction>> {
  const funding = q.action !== 'FREEZE' && q.action !== 'UNFREEZE';
  if (funding && q.amount === undefined && q.action !== 'RESET_SPENT') {
    throw invalidRequest(`amount is required for ${q.action}`, { field: 'amount' });
  }
  const tenant = q.filter.tenantId;
  const detail = { bulk_action: q.action, bulk_idempotency_key: q.idempotencyKey };
  const rowContext = { ...context, detail };
  return bulkAction(
    {
      action: q.action,
      idempotencyKey: q.idempotencyKey,
      expectedCount: q.expectedCount,
      scope: { tenant, operation: 'budgets-bulk-action' },
      request: q,
      now: context.now,
    },
    () =>
      allOf(
        async (cursor) =>
          listBudgets(writer, { ...q.filter, limit: 100, cursor }, context.now).then((page) => ({
            items: page.items,
            nextPosition: page.nextCursor,
          })),
        'budgets',
      ),
    async (record: BudgetRecord): Promise<Row> => {
      const { ref, status, counters } = record.budget;
      const id = derivedId('ldg', record.tenant, budgetKey(ref));
      try {
        if (q.action === 'FREEZE' || q.action === 'UNFREEZE') {
          const frozen = q.action === 'FREEZE';
          if ((status === 'FROZEN') === frozen) return { kind: 'skipped', id, reason: ALREADY };
          await setBudgetFrozen(writer, ref, frozen, rowContext);
          return { kind: 'succeeded', id };
        }
        if (q.action === 'REPAY_DEBT' && counters.debt === 0) {
          return { kind: 'skipped', id, reason: ALREADY };
        }
        const amount = q.amount ?? { unit: ref.unit, amount: 0 };
        if (amount.unit !== ref.unit) {
          return {
            kind: 'failed',
            id,
            errorCode: 'INVALID_TRANSITION',
            message: `the budget is in ${ref.unit}, the amount in ${amount.unit}`,
          };
        }
        await fundBudget(
          writer,
          {
            ...ref,
            operation: q.action,
            amount,
            idempotencyKey: `bulk:${q.idempotencyKey}:${id}`,
            ...(q.reason !== undefined && { reason: q.reason }),
          },
          rowContext,
        );
        return { kind: 'succeeded', id };
      } catch (error) {
        return failedRow(id, error);
      }
    },
  );
}
