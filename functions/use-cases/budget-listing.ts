import type { Unit } from '../domain/amounts.js';
import {
  type BudgetRecord,
  type BudgetSortKey,
  type BudgetStatus,
  balanceOf,
  budgetKey,
  isOverLimit,
} from '../domain/budget.js';
import { type BudgetWriter, requireOwnTenant } from '../domain/caller.js';
import { invalidRequest } from '../domain/errors.js';
import { queryLedgerIndex } from '../store/budgets/ledger-index.js';
import { watchedBudgets } from '../store/budgets/watch.js';
import { queryTenants } from '../store/tenants.js';
import { viewBudgets } from './budget-reader.js';
import {
  allOf,
  MAX_SORT_CANDIDATES,
  type Page,
  type PageRequest,
  paged,
  type SortDirection,
  type SortKey,
  sortedPage,
} from './pages.js';

// GET /v1/admin/budgets (issue 27 point 5): one tenant's budgets, or — the admin key without
// tenant_id — every tenant's, filtered and sorted as the reference defines, never by a Scan.

export interface BudgetFilters extends PageRequest {
  readonly tenantId?: string | undefined;
  readonly scopePrefix?: string | undefined;
  readonly unit?: Unit | undefined;
  readonly status?: BudgetStatus | undefined;
  readonly overLimit?: boolean | undefined;
  readonly hasDebt?: boolean | undefined;
  /** spent / allocated, inclusive; a budget with nothing allocated is at 0. */
  readonly utilizationMin?: number | undefined;
  readonly utilizationMax?: number | undefined;
  /** Case-insensitive substring of the tenant id or the scope. */
  readonly search?: string | undefined;
  readonly sortBy?: BudgetSortKey | undefined;
  readonly sortDir?: SortDirection | undefined;
}

/** Tenants visited at most per page of a listing across tenants: a page may come back short. */
const TENANTS_PER_PAGE = 100;

const utilization = (r: BudgetRecord): number => {
  const { allocated, spent } = r.budget.counters;
  return allocated > 0 ? spent / allocated : 0;
};

function matcher(q: BudgetFilters) {
  const needle = q.search?.toLowerCase();
  return (r: BudgetRecord): boolean => {
    const { budget } = r;
    const u = utilization(r);
    return (
      (q.status === undefined || budget.status === q.status) &&
      (q.overLimit === undefined || isOverLimit(balanceOf(budget)) === q.overLimit) &&
      (q.hasDebt === undefined || budget.counters.debt > 0 === q.hasDebt) &&
      (q.utilizationMin === undefined || u >= q.utilizationMin) &&
      (q.utilizationMax === undefined || u <= q.utilizationMax) &&
      (q.scopePrefix === undefined || budget.ref.scope.startsWith(q.scopePrefix)) &&
      (q.unit === undefined || budget.ref.unit === q.unit) &&
      (needle === undefined ||
        r.tenant.toLowerCase().includes(needle) ||
        budget.ref.scope.toLowerCase().includes(needle))
    );
  };
}

const sortKeyOf =
  (by: BudgetSortKey) =>
  (r: BudgetRecord): SortKey => {
    const b = r.budget;
    const value = {
      tenant_id: r.tenant,
      scope: b.ref.scope,
      unit: b.ref.unit,
      status: b.status,
      commit_overage_policy: '',
      utilization: utilization(r),
      debt: b.counters.debt,
    }[by];
    return [value, `${r.tenant}#${budgetKey(b.ref)}`];
  };

/** The position of a walk across tenants: the tenant, then the position in its ledger index. */
const SEPARATOR = '\u0001';

/**
 * GET /v1/admin/budgets. A key lists its own tenant's budgets; the admin key one tenant's
 * (tenant_id) or every tenant's: those in debt or over their limit from the debt watch, any
 * other filter by walking the tenants (at most TENANTS_PER_PAGE a page). In scope order, or
 * sorted (sort_by) in memory over at most MAX_SORT_CANDIDATES matches, as the reference sorts.
 */
export function listBudgets(
  reader: BudgetWriter,
  q: BudgetFilters,
  now: number,
): Promise<Page<BudgetRecord>> {
  if (reader.kind === 'tenant' && q.tenantId !== undefined) {
    requireOwnTenant(reader, q.tenantId, `tenant '${q.tenantId}'`, { tenant_id: q.tenantId });
  }
  if (
    q.utilizationMin !== undefined &&
    q.utilizationMax !== undefined &&
    q.utilizationMin > q.utilizationMax
  ) {
    throw invalidRequest('utilization_min is above utilization_max', { field: 'utilization_min' });
  }
  const tenant = reader.kind === 'tenant' ? reader.tenant : q.tenantId;
  const matches = matcher(q);
  const { cursor: _c, limit: _l, sortBy, sortDir, ...filters } = q;
  const binding = { route: 'budgets', ...filters, tenantId: tenant };
  const fromWatch = tenant === undefined && (q.hasDebt === true || q.overLimit === true);
  const walk = fromWatch
    ? undefined
    : (after: string | undefined, limit: number) =>
        tenant === undefined
          ? acrossTenants(q, after, limit, matches, now)
          : ofTenant(tenant, q, after, limit, matches, now);
  if (walk && sortBy === undefined) return paged(binding, q, (after) => walk(after, q.limit));
  const candidates = walk
    ? () => allOf((after) => walk(after, 1_000), 'budgets')
    : async () =>
        (await viewBudgets(await watchedBudgets(MAX_SORT_CANDIDATES), now)).filter(matches);
  return sortedPage(
    { ...binding, sortBy: sortBy ?? 'tenant_id' },
    { ...q, direction: sortDir ?? (sortBy === undefined ? 'asc' : 'desc') },
    candidates,
    sortKeyOf(sortBy ?? 'tenant_id'),
  );
}

/** One tenant's budgets in scope order, from its ledger index, filtered. */
async function ofTenant(
  tenant: string,
  q: BudgetFilters,
  after: string | undefined,
  limit: number,
  matches: (r: BudgetRecord) => boolean,
  now: number,
) {
  const page = await queryLedgerIndex({
    tenant,
    segment: `tenant:${tenant}`,
    alsoContains: [],
    scopePrefix: q.scopePrefix,
    unit: q.unit,
    after,
    limit,
  });
  const records = await viewBudgets(page.entries, now);
  const last = page.entries[page.entries.length - 1];
  return {
    items: records.filter(matches),
    nextPosition: page.hasMore && last ? last.position : undefined,
  };
}

/**
 * Every tenant's budgets, tenant by tenant (the directory index), each in scope order, until
 * `limit` match or TENANTS_PER_PAGE tenants were read. A position is `<tenant>\u0001<position
 * in its ledger index>`, or `<tenant>\u0001` once that tenant is done.
 */
async function acrossTenants(
  q: BudgetFilters,
  after: string | undefined,
  limit: number,
  matches: (r: BudgetRecord) => boolean,
  now: number,
) {
  const items: BudgetRecord[] = [];
  let visited = 0;
  let tenantAfter: string | undefined;
  const inside = (tenant: string, position: string | undefined) =>
    ofTenant(tenant, q, position, limit - items.length, matches, now);
  if (after !== undefined) {
    const [tenant = '', position = ''] = after.split(SEPARATOR);
    tenantAfter = tenant;
    if (position !== '') {
      visited++;
      const page = await inside(tenant, position);
      items.push(...page.items);
      if (page.nextPosition !== undefined) {
        return { items, nextPosition: `${tenant}${SEPARATOR}${page.nextPosition}` };
      }
    }
  }
  while (visited < TENANTS_PER_PAGE && items.length < limit) {
    const tenants = await queryTenants({ after: tenantAfter, limit: TENANTS_PER_PAGE - visited });
    for (const { tenantId } of tenants.tenants) {
      visited++;
      tenantAfter = tenantId;
      const page = await inside(tenantId, undefined);
      items.push(...page.items);
      if (page.nextPosition !== undefined) {
        return { items, nextPosition: `${tenantId}${SEPARATOR}${page.nextPosition}` };
      }
      if (items.length >= limit) break;
    }
    const last = tenants.tenants[tenants.tenants.length - 1]?.tenantId;
    if (tenants.nextPosition === undefined && last === tenantAfter) return { items };
    if (tenants.tenants.length === 0) return { items };
  }
  return { items, nextPosition: `${tenantAfter ?? ''}${SEPARATOR}` };
}
