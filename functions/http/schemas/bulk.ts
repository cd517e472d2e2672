import * as z from 'zod/mini';
import { BUDGET_STATUSES, FUND_OPERATIONS } from '../../domain/ledger.js';
import { MAX_SCOPE_LENGTH } from '../../domain/scopes.js';
import { TENANT_STATUSES } from '../../domain/tenant.js';
import type { BudgetBulkRequest, TenantBulkRequest } from '../../use-cases/bulk-actions.js';
import { Amount, TenantId, Unit } from './common.js';
import { Search } from './lists.js';

// The reference's bulk actions on tenants and budgets (docs/decisions.md § Bulk actions). A module
// of their own, apart from the policies' schemas (governance.ts) and the other admin schemas: a
// zod schema is built by calls a bundler must keep, so a function carries every schema of each
// module it imports, and a bulk action's function stays within its size target.

const BulkKey = z.string().check(z.minLength(1), z.maxLength(128));
const ExpectedCount = z.optional(z.int().check(z.minimum(0)));

/** The reference's TenantBulkFilter: at least one property (an empty one would be every tenant). */
const TenantBulkFilter = z
  .object({
    status: z.optional(z.enum(TENANT_STATUSES)),
    parent_tenant_id: z.optional(TenantId),
    observe_mode: z.optional(z.string()),
    search: Search,
  })
  .check(
    z.refine((f) => Object.values(f).some((v) => v !== undefined), {
      message: 'names no filter: an empty filter would act on every tenant',
    }),
  );

/** The reference's TenantBulkActionRequest. */
export const TenantBulkActionBody = z.pipe(
  z.object({
    filter: TenantBulkFilter,
    action: z.enum(['SUSPEND', 'REACTIVATE', 'CLOSE']),
    expected_count: ExpectedCount,
    idempotency_key: BulkKey,
  }),
  z.transform(
    (b): TenantBulkRequest => ({
      filter: {
        status: b.filter.status,
        parentTenantId: b.filter.parent_tenant_id,
        search: b.filter.search,
      },
      action: b.action,
      expectedCount: b.expected_count,
      idempotencyKey: b.idempotency_key,
    }),
  ),
);

const Fraction = z.optional(z.number().check(z.minimum(0), z.maximum(1)));

/** The reference's BudgetBulkFilter: one tenant's budgets. */
const BudgetBulkFilter = z.object({
  tenant_id: TenantId,
  scope_prefix: z.optional(z.string().check(z.minLength(1), z.maxLength(MAX_SCOPE_LENGTH))),
  unit: z.optional(Unit),
  status: z.optional(z.enum(BUDGET_STATUSES)),
  over_limit: z.optional(z.boolean()),
  has_debt: z.optional(z.boolean()),
  utilization_min: Fraction,
  utilization_max: Fraction,
  search: Search,
});

/**
 * The reference's BudgetBulkActionRequest; FREEZE and UNFREEZE are ours beside its funding
 * operations. RESET_SPENT's amount is the spent to start from, as in a single funding
 * (docs/decisions.md): the reference's `spent` field is refused rather than misread.
 */
export const BudgetBulkActionBody = z.pipe(
  z
    .object({
      filter: BudgetBulkFilter,
      action: z.enum([...FUND_OPERATIONS, 'FREEZE', 'UNFREEZE']),
      amount: z.optional(Amount),
      spent: z.optional(z.unknown()),
      reason: z.optional(z.string().check(z.maxLength(512))),
      expected_count: ExpectedCount,
      idempotency_key: BulkKey,
    })
    .check(
      z.refine((b) => b.spent === undefined, {
        path: ['spent'],
        message:
          "is not taken: RESET_SPENT's amount is the spent to start from here, the allocation is kept",
      }),
    ),
  z.transform(
    (b): BudgetBulkRequest => ({
      filter: {
        tenantId: b.filter.tenant_id,
        scopePrefix: b.filter.scope_prefix,
        unit: b.filter.unit,
        status: b.filter.status,
        overLimit: b.filter.over_limit,
        hasDebt: b.filter.has_debt,
        utilizationMin: b.filter.utilization_min,
        utilizationMax: b.filter.utilization_max,
        search: b.filter.search,
      },
      action: b.action,
      amount: b.amount,
      reason: b.reason,
      expectedCount: b.expected_count,
      idempotencyKey: b.idempotency_key,
    }),
  ),
);
