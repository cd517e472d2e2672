import * as z from 'zod/mini';
import { type ApiKeyChange, KEY_SORT_KEYS, OPERATORS } from '../../domain/api-keys.js';
import {
  AUDIT_OPERATION_NAMES,
  AUDIT_RESOURCE_TYPES,
  AUDIT_SORT_KEYS,
} from '../../domain/audit.js';
import { BUDGET_SORT_KEYS } from '../../domain/budget.js';
import { MAX_THRESHOLDS } from '../../domain/budget-events.js';
import { BPS, type Caps, MAX_CAPS_BYTES, mergeCaps } from '../../domain/caps.js';
import { DomainError } from '../../domain/errors.js';
import { MAX_SHARDS } from '../../domain/escrow.js';
import { BUDGET_STATUSES, FUND_OPERATIONS } from '../../domain/ledger.js';
import { PERIOD_KINDS, validAnchor } from '../../domain/period.js';
import { PERMISSIONS } from '../../domain/permissions.js';
import { MAX_SCOPE_LENGTH } from '../../domain/scopes.js';
import {
  TENANT_SORT_KEYS,
  TENANT_STATUSES,
  type TenantChange,
  type TenantSettings,
} from '../../domain/tenant.js';
import type { ApiKeyRequest } from '../../use-cases/api-keys.js';
import type { BudgetChange } from '../../use-cases/budget-settings.js';
import type { BudgetRequest, FundRequest } from '../../use-cases/budgets.js';
import type { TenantRequest } from '../../use-cases/tenants.js';
import {
  Amount,
  BooleanParam,
  Chars,
  Cursor,
  camel,
  IdempotencyKey,
  Int,
  TenantId,
  Unit,
} from './common.js';
import { clampedLimit, Search, SortDir } from './lists.js';
import {
  RateLimitsBody,
  settingsOf,
  TenantSettingsFields,
  TenantSettingsPatch,
} from './tenants.js';

/** A scope path: it is part of DynamoDB keys, so at most MAX_SCOPE_LENGTH characters. */
const Scope = Chars(1, MAX_SCOPE_LENGTH);

export { TenantId };

/** The reference's TenantCreateRequest, and our unbudgeted_scopes option. */
export const CreateTenantBody = z.pipe(
  z.object({
    tenant_id: TenantId,
    name: Chars(1, 256),
    ...TenantSettingsFields,
  }),
  z.transform(
    (b): TenantRequest => ({
      tenantId: b.tenant_id,
      name: b.name,
      parentTenantId: b.parent_tenant_id,
      metadata: b.metadata,
      settings: settingsOf(b) as TenantSettings,
    }),
  ),
);
export type CreateTenantBody = z.infer<typeof CreateTenantBody>;

/** A key's owner: a tenant, or OPERATORS for a named operator credential (docs/decisions.md § Operators). */
export const KeyOwner = z.union([TenantId, z.literal(OPERATORS)]);

const Permissions = z.array(z.enum(PERMISSIONS)).check(z.maxLength(PERMISSIONS.length));

export const CreateApiKeyBody = z.pipe(
  z.object({
    tenant_id: KeyOwner,
    name: Chars(1, 256),
    description: z.optional(z.string().check(z.maxLength(1024))),
    /** Absent: SPEC's eight and budgets:write for a tenant key; an operator credential names its own. */
    permissions: z.optional(Permissions),
    expires_at: z.optional(z.iso.datetime({ offset: true })),
    rate_limits: z.optional(RateLimitsBody),
  }),
  z.transform((b): ApiKeyRequest => camel(b)),
);
export type CreateApiKeyBody = z.infer<typeof CreateApiKeyBody>;

/** A tool name as Action.name carries it; an empty list would restrict nothing (reference precedence). */
const ToolList = z.array(Chars(1, 256)).check(z.minLength(1));

/**
 * SPEC § Caps, as a budget carries them. Closed: an unknown key is a constraint the operator
 * asked for and would never see answered, so it is refused, not ignored. At least one field;
 * at most MAX_CAPS_BYTES of JSON, as the ledger item carries them on every transaction.
 */
export const CapsBody = z.pipe(
  z
    .strictObject({
      max_tokens: z.optional(Int(0)),
      max_steps_remaining: z.optional(Int(0)),
      tool_allowlist: z.optional(ToolList),
      tool_denylist: z.optional(ToolList),
      cooldown_ms: z.optional(Int(0)),
    })
    .check(
      z.superRefine((c, ctx) => {
        if (Object.values(c).every((v) => v === undefined)) {
          ctx.addIssue({ code: 'custom', message: 'needs at least one constraint', input: c });
        }
        const both = c.tool_denylist?.filter((t) => c.tool_allowlist?.includes(t)) ?? [];
        if (both.length > 0) {
          ctx.addIssue({
            code: 'custom',
            path: ['tool_denylist'],
            message: `names ${JSON.stringify(both[0])}, which tool_allowlist allows: an allowlist makes clients ignore the denylist, list a tool in one of them only`,
            input: c.tool_denylist,
          });
        }
        if (Buffer.byteLength(JSON.stringify(c)) > MAX_CAPS_BYTES) {
          ctx.addIssue({
            code: 'custom',
            message: `at most ${MAX_CAPS_BYTES} bytes of JSON`,
            input: c,
          });
        }
      }),
    ),
  // Stored canonical (lists sorted, no duplicates): what is stored is what a reserve answers.
  z.transform(
    (c): Caps =>
      mergeCaps(
        {},
        {
          ...(c.max_tokens !== undefined && { maxTokens: c.max_tokens }),
          ...(c.max_steps_remaining !== undefined && { maxStepsRemaining: c.max_steps_remaining }),
          ...(c.tool_allowlist && { toolAllowlist: c.tool_allowlist }),
          ...(c.tool_denylist && { toolDenylist: c.tool_denylist }),
          ...(c.cooldown_ms !== undefined && { cooldownMs: c.cooldown_ms }),
        },
      ),
  ),
);

/** Integer percents of allocated, 1–100; [] reports no threshold (exhaustion still is). */
const Thresholds = z
  .array(z.number().check(z.int(), z.gte(1), z.lte(100)))
  .check(z.maxLength(MAX_THRESHOLDS));

const Shards = z.number().check(z.int(), z.gte(1), z.lte(MAX_SHARDS));

/** Ours (x-extension budget-reservations): the most one reservation may hold on the budget. */
const MaxReservationAmount = Amount.check(
  z.describe(
    'Ours: the most one reservation may hold on this budget; a larger estimate is refused (409 BUDGET_EXCEEDED, details.reason MAX_RESERVATION_AMOUNT_EXCEEDED; decide and dry runs answer DENY with reason_code MAX_RESERVATION_AMOUNT_EXCEEDED). Charges and commits are not capped.',
  ),
);

export const CreateBudgetBody = z.pipe(
  z
    .object({
      scope: Scope,
      unit: Unit,
      allocated: Amount,
      overdraft_limit: z.optional(Amount),
      /** Escrow shards for a busy budget (docs/scaling.md); 1 (unsharded) when absent. */
      shards: z.optional(Shards),
      caps: z.optional(CapsBody),
      /** Soft landing (domain/caps.ts): caps only once remaining after a hold is below this share. */
      caps_when_remaining_below_bps: z.optional(Int(1, BPS)),
      /** Rolls over by itself each period (domain/period.ts); `allocated` is per period. */
      period: z.optional(z.enum(PERIOD_KINDS)),
      period_anchor_day: z.optional(z.number().check(z.int(), z.gte(1), z.lte(28))),
      /** Budget events at these percents of allocated used (domain/budget-events.ts). */
      thresholds: z.optional(Thresholds),
      max_reservation_amount: z.optional(MaxReservationAmount),
    })
    .check(
      z.refine((b) => b.caps_when_remaining_below_bps === undefined || b.caps !== undefined, {
        path: ['caps_when_remaining_below_bps'],
        message: 'needs caps',
      }),
      z.refine(
        (b) =>
          b.period_anchor_day === undefined ||
          (b.period !== undefined &&
            validAnchor({ kind: b.period, anchorDay: b.period_anchor_day })),
        {
          path: ['period_anchor_day'],
          message: 'needs period WEEKLY (1 = Monday … 7 = Sunday) or MONTHLY (1–28)',
        },
      ),
    ),
  z.transform(
    ({
      caps,
      caps_when_remaining_below_bps: bps,
      period,
      period_anchor_day: anchorDay,
      ...b
    }): BudgetRequest => ({
      ...camel(b),
      ...(caps && { caps: { caps, ...(bps !== undefined && { belowRemainingBps: bps }) } }),
      ...(period && { period: { kind: period, ...(anchorDay !== undefined && { anchorDay }) } }),
    }),
  ),
);
export type CreateBudgetBody = z.infer<typeof CreateBudgetBody>;

/** SPEC's POST /v1/admin/budgets/{scope}/{unit}/fund, as a client fills it in (and the document lists it). */
export const FundPathParams = z.object({
  scope: Scope.check(
    z.describe("The budget's scope, percent-encoded: a nested scope's '/' is sent as %2F"),
  ),
  unit: Unit,
});

/**
 * `{budget+}` of POST /v1/admin/budgets/{budget+}: `<scope>/<unit>/fund`, already
 * percent-decoded (API Gateway decodes the path), so a nested scope spans several segments.
 * Anything else under /v1/admin/budgets/ is no endpoint.
 */
export const FundPath = z.pipe(
  z.pipe(
    z.object({ budget: z.string().check(z.maxLength(4200)) }),
    z.transform(({ budget }) => {
      const match = /^(.+)\/([^/]+)\/fund$/.exec(budget);
      if (!match)
        throw new DomainError('NOT_FOUND', `no endpoint POST /v1/admin/budgets/${budget}`);
      return { scope: match[1] ?? '', unit: match[2] ?? '' };
    }),
  ),
  FundPathParams,
);

export const FundBudgetBody = z
  .object({
    operation: z.enum(FUND_OPERATIONS),
    amount: z
      .optional(Amount)
      .check(
        z.describe(
          'Required, except for RESET_SPENT, where it is the spent to start from and defaults to 0 (a new period: spent back to 0, allocation kept)',
        ),
      ),
    idempotency_key: IdempotencyKey,
    reason: z.optional(z.string().check(z.maxLength(1024))),
  })
  .check(
    z.refine((b) => b.amount !== undefined || b.operation === 'RESET_SPENT', {
      path: ['amount'],
      message: 'amount is required, except for RESET_SPENT',
    }),
  );
/** The fund request: the budget from the path, the operation from the body. */
export const fundRequest = (params: z.infer<typeof FundPath>, b: FundBudgetBody): FundRequest => ({
  ...params,
  ...camel(b),
  // RESET_SPENT without an amount: a new period, spent back to 0.
  amount: b.amount ?? { unit: params.unit, amount: 0 },
});
export type FundBudgetBody = z.infer<typeof FundBudgetBody>;

export const ValidateKeyBody = z.object({ key_secret: Chars(1, 512) });

// ---- the operator's control plane (docs/decisions.md § Control plane) ------------------------

/**
 * Reference admin listings: 1 to 100 per page, 50 by default; a limit outside is clamped to that
 * range, not refused, as the reference server does (its dashboard asks for 1000 or 2000).
 */
const AdminPageLimit = clampedLimit(100);

export const TenantParams = z.object({ tenant_id: TenantId });

export const ListTenantsQuery = z.pipe(
  z.object({
    status: z.optional(z.enum(TENANT_STATUSES)),
    parent_tenant_id: z.optional(TenantId),
    search: Search,
    sort_by: z.optional(z.enum(TENANT_SORT_KEYS)),
    sort_dir: SortDir,
    limit: AdminPageLimit,
    cursor: z.optional(Cursor),
  }),
  z.transform(camel),
);

/** Strict: a field we do not implement would change what the request means (issue 13 § 5). */
export const UpdateTenantBody = z.pipe(
  z
    .strictObject({
      name: z.optional(Chars(1, 256)),
      status: z.optional(z.enum(TENANT_STATUSES)),
      ...TenantSettingsPatch,
      /** The tenant's request-rate limits, whole; null: none. */
      rate_limits: z.optional(z.nullable(RateLimitsBody)),
    })
    .check(z.refine((b) => Object.keys(b).length > 0, { message: 'names no field to change' })),
  z.transform(
    (b): TenantChange => ({
      name: b.name,
      status: b.status,
      metadata: b.metadata,
      settings: settingsOf(b),
      rateLimits: b.rate_limits,
    }),
  ),
);

export const KeyParams = z.object({
  key_id: Chars(1, 64).check(z.regex(/^key_[0-9a-f]+$/, 'is not a key id')),
});

export const ListApiKeysQuery = z.pipe(
  z.object({
    tenant_id: z.optional(KeyOwner),
    status: z.optional(z.enum(['ACTIVE', 'REVOKED', 'EXPIRED'])),
    search: Search,
    sort_by: z.optional(z.enum(KEY_SORT_KEYS)),
    sort_dir: SortDir,
    limit: AdminPageLimit,
    cursor: z.optional(Cursor),
  }),
  z.transform(camel),
);

export const UpdateApiKeyBody = z.pipe(
  z
    .strictObject({
      name: z.optional(Chars(1, 256)),
      description: z.optional(z.string().check(z.maxLength(1024))),
      permissions: z.optional(Permissions),
      /** The key's own limits, whole; null: none (its tenant's alone). */
      rate_limits: z.optional(z.nullable(RateLimitsBody)),
    })
    .check(
      z.refine((b) => Object.keys(b).length > 0, {
        message: 'one of name, description, permissions, rate_limits is required',
      }),
    ),
  z.transform((b): ApiKeyChange => camel(b)),
);

export const RevokeApiKeyQuery = z.object({ reason: z.optional(Chars(1, 512)) });

const Instant = z.pipe(
  z.iso.datetime({ offset: true }),
  z.transform((t) => Date.parse(t)),
);

export const ListAuditLogsQuery = z.pipe(
  z.object({
    tenant_id: z.optional(KeyOwner),
    /** The actor: a key id, or `admin` for the operator. */
    key_id: z.optional(Chars(1, 64)),
    operation: z.optional(z.enum(AUDIT_OPERATION_NAMES as [string, ...string[]])),
    resource_type: z.optional(z.enum(AUDIT_RESOURCE_TYPES)),
    resource_id: z.optional(Chars(1, 4200)),
    from: z.optional(Instant),
    to: z.optional(Instant),
    sort_by: z.optional(z.enum(AUDIT_SORT_KEYS)),
    sort_dir: SortDir,
    limit: AdminPageLimit,
    cursor: z.optional(Cursor),
  }),
  z.transform(camel),
);

/** `?scope=&unit=`: a nested scope in a query parameter has no path-decoding trap. */
export const BudgetQuery = z.object({ scope: Scope, unit: Unit });

/** A fraction of allocated spent, 0 to 1. */
const Utilization = z.optional(z.coerce.number().check(z.gte(0), z.lte(1)));

/** The admin key lists every tenant's budgets without tenant_id (the reference's). */
export const ListBudgetsQuery = z.pipe(
  z.object({
    tenant_id: z.optional(TenantId),
    scope_prefix: z.optional(Scope),
    unit: z.optional(Unit),
    status: z.optional(z.enum(BUDGET_STATUSES)),
    over_limit: z.optional(BooleanParam),
    has_debt: z.optional(BooleanParam),
    utilization_min: Utilization,
    utilization_max: Utilization,
    search: Search,
    sort_by: z.optional(z.enum(BUDGET_SORT_KEYS)),
    sort_dir: SortDir,
    limit: AdminPageLimit,
    cursor: z.optional(Cursor),
  }),
  z.transform(camel),
);

/** Strict: counters change only by funding; a field we do not know is refused. */
export const UpdateBudgetBody = z.pipe(
  z
    .strictObject({
      overdraft_limit: z.optional(Amount),
      caps: z.optional(z.nullable(CapsBody)),
      caps_when_remaining_below_bps: z.optional(Int(1, BPS)),
      /** null restores the default thresholds. */
      thresholds: z.optional(z.nullable(Thresholds)),
      /** More escrow shards for a budget that got busy (docs/scaling.md); never fewer. */
      shards: z.optional(Shards),
      /** null removes the cap. */
      max_reservation_amount: z.optional(z.nullable(MaxReservationAmount)),
    })
    .check(
      z.refine((b) => Object.keys(b).length > 0, {
        message:
          'one of overdraft_limit, caps, thresholds, shards, max_reservation_amount is required',
      }),
      z.refine((b) => b.shards === undefined || Object.keys(b).length === 1, {
        // Two changes of one budget, each with its own transaction and audit record: one at a time.
        message: 'shards is changed on its own: send the other fields in a PATCH of their own',
        path: ['shards'],
      }),
      z.refine(
        (b) =>
          b.caps_when_remaining_below_bps === undefined ||
          (b.caps !== undefined && b.caps !== null),
        {
          message: 'caps_when_remaining_below_bps needs caps',
          path: ['caps_when_remaining_below_bps'],
        },
      ),
    ),
  z.transform(
    (b): BudgetChange => ({
      ...(b.shards !== undefined && { shards: b.shards }),
      ...(b.overdraft_limit !== undefined && { overdraftLimit: b.overdraft_limit }),
      ...(b.thresholds !== undefined && { thresholds: b.thresholds }),
      ...(b.max_reservation_amount !== undefined && {
        maxReservationAmount: b.max_reservation_amount,
      }),
      ...(b.caps !== undefined && {
        caps:
          b.caps === null
            ? null
            : {
                caps: b.caps,
                ...(b.caps_when_remaining_below_bps !== undefined && {
                  belowRemainingBps: b.caps_when_remaining_below_bps,
                }),
              },
      }),
    }),
  ),
);

export const ClosedPeriodsQuery = z.object({
  scope: Scope,
  unit: Unit,
  limit: AdminPageLimit,
  cursor: z.optional(Cursor),
});
