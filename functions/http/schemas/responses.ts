import * as z from 'zod';
import { AUDIT_OPERATION_NAMES, AUDIT_RESOURCE_TYPES } from '../../domain/audit.js';
import { MAX_THRESHOLDS } from '../../domain/budget-events.js';
import { CAPABILITIES, type Capability } from '../../domain/capabilities.js';
import { BPS } from '../../domain/caps.js';
import { MAX_SHARDS } from '../../domain/escrow.js';
import { BUDGET_STATUSES, FUND_OPERATIONS } from '../../domain/ledger.js';
import { PERIOD_KINDS } from '../../domain/period.js';
import { PERMISSIONS } from '../../domain/permissions.js';
import { EXPIRY_POLICIES, TENANT_STATUSES, UNBUDGETED_SCOPES } from '../../domain/tenant.js';
import { STATUS } from '../errors.js';
import { Unit } from './common.js';

/**
 * The success bodies views.ts renders, exactly: closed objects, optional fields optional (a view
 * omits them, never sends null), one variant per shape a view can take. They are not used to
 * answer requests; they are the source of the OpenAPI documents (infra/openapi.ts), where every
 * exported schema is a component of that name, and test/helpers/http.ts checks every success
 * body of the integration suite against them.
 */

const Count = z.number().int().nonnegative();
const EpochMs = z.number().int().nonnegative();
/** What views render from the `toISOString()` the use cases stamp. */
const Timestamp = z.iso.datetime();
const JsonObject = z.record(z.string(), z.unknown());
const Scopes = z
  .array(z.string())
  .min(1)
  .describe('Canonical scope identifiers, in canonical order');

export const Amount = z.strictObject({ unit: Unit, amount: Count });

/** `remaining` goes below zero with debt (SPEC's Balance invariant). */
export const SignedAmount = z.strictObject({ unit: Unit, amount: z.number().int() });

const balanceFields = {
  scope: z.string(),
  scope_path: z.string(),
  remaining: SignedAmount,
  allocated: Amount,
  spent: Amount,
  reserved: Amount,
  debt: Amount,
  overdraft_limit: Amount,
  is_over_limit: z.boolean(),
};
export const Balance = z
  .strictObject(balanceFields)
  .describe('One (scope, unit) ledger: remaining = allocated − spent − reserved − debt');

export const Caps = z.strictObject({
  max_tokens: Count.optional(),
  max_steps_remaining: Count.optional(),
  tool_allowlist: z.array(z.string()).optional(),
  tool_denylist: z.array(z.string()).optional(),
  cooldown_ms: Count.optional(),
});

export const Subject = z.strictObject({
  tenant: z.string().optional(),
  workspace: z.string().optional(),
  app: z.string().optional(),
  workflow: z.string().optional(),
  agent: z.string().optional(),
  toolset: z.string().optional(),
  dimensions: z.record(z.string(), z.string()).optional(),
});

export const Action = z.strictObject({
  kind: z.string(),
  name: z.string(),
  tags: z.array(z.string()).optional(),
});

export const ReservationStatus = z.enum(['ACTIVE', 'COMMITTED', 'RELEASED', 'EXPIRED']);

/** The reference's open DecisionReasonCode: ours are BUDGET_EXCEEDED, BUDGET_FROZEN, … */
const ReasonCode = z
  .string()
  .describe(
    "Why the answer is DENY: BUDGET_EXCEEDED, DEBT_OUTSTANDING, OVERDRAFT_LIMIT_EXCEEDED, BUDGET_FROZEN, BUDGET_CLOSED, MAX_RESERVATION_AMOUNT_EXCEEDED (ours: the estimate is above a budget's max_reservation_amount), TENANT_CLOSED (the tenant is closed) or BUDGET_NOT_FOUND (a tenant that skips unbudgeted scopes, with none of the derived ones budgeted). Handle unknown values as a DENY.",
  );

export const ErrorResponse = z.strictObject({
  error: z.enum(Object.keys(STATUS) as [keyof typeof STATUS, ...(keyof typeof STATUS)[]]),
  message: z.string(),
  request_id: z.string(),
  details: JsonObject.optional(),
});

// ---- runtime ------------------------------------------------------------------------------

const placement = {
  affected_scopes: Scopes,
  scope_path: z.string(),
  reserved: Amount,
  balances: z.array(Balance),
};
const lease = {
  reservation_id: z.string(),
  expires_at_ms: EpochMs,
  remaining_ttl_ms: Count.describe('The lease left as the answer was made; 0 once not ACTIVE'),
};

/** reservationCreatedView: a live reservation, or a dry run's decision (no id, no expiry). */
export const ReservationCreateResponse = z.union([
  z.strictObject({ decision: z.literal('ALLOW'), ...lease, ...placement }),
  z.strictObject({ decision: z.literal('ALLOW_WITH_CAPS'), caps: Caps, ...lease, ...placement }),
  z.strictObject({ decision: z.literal('ALLOW'), ...placement }),
  z.strictObject({ decision: z.literal('ALLOW_WITH_CAPS'), caps: Caps, ...placement }),
  z.strictObject({ decision: z.literal('DENY'), reason_code: ReasonCode, ...placement }),
]);

export const DecisionResponse = z.discriminatedUnion('decision', [
  z.strictObject({ decision: z.literal('ALLOW'), affected_scopes: Scopes }),
  z.strictObject({ decision: z.literal('ALLOW_WITH_CAPS'), caps: Caps, affected_scopes: Scopes }),
  z.strictObject({ decision: z.literal('DENY'), reason_code: ReasonCode, affected_scopes: Scopes }),
]);

export const CommitResponse = z.strictObject({
  status: z.literal('COMMITTED'),
  charged: Amount,
  released: Amount,
  balances: z.array(Balance),
});

export const ReleaseResponse = z.strictObject({
  status: z.literal('RELEASED'),
  released: Amount,
  balances: z.array(Balance),
});

export const ReservationExtendResponse = z.strictObject({
  status: z.literal('ACTIVE'),
  expires_at_ms: EpochMs,
  remaining_ttl_ms: Count,
  balances: z.array(Balance),
});

export const EventCreateResponse = z.strictObject({
  status: z.literal('APPLIED'),
  event_id: z.string(),
  balances: z.array(Balance),
});

const reservationFields = {
  reservation_id: z.string(),
  status: ReservationStatus,
  idempotency_key: z.string(),
  subject: Subject,
  action: Action,
  reserved: Amount,
  committed: Amount.optional(),
  created_at_ms: EpochMs,
  expires_at_ms: EpochMs,
  finalized_at_ms: EpochMs.optional(),
  scope_path: z.string(),
  affected_scopes: Scopes,
};
/** A listed reservation: never its metadata. */
export const ReservationSummary = z.strictObject(reservationFields);
export const ReservationDetail = z.strictObject({
  ...reservationFields,
  metadata: JsonObject.optional(),
});

/** A page of a listing: `next_cursor` exactly when `has_more`. */
export function page<K extends string, T extends z.ZodType>(key: K, item: T) {
  const items = { [key]: z.array(item) } as { [P in K]: z.ZodArray<T> };
  return z.strictObject({
    ...items,
    has_more: z.boolean(),
    next_cursor: z.string().optional(),
  });
}

export const ReservationListResponse = page('reservations', ReservationSummary);
export const BalanceResponse = page('balances', Balance);

const Capabilities = z.strictObject(
  Object.fromEntries(CAPABILITIES.map((c) => [c, z.boolean()])) as Record<Capability, z.ZodBoolean>,
);
const Permission = z.enum(PERMISSIONS);

/** A tenant key: its id and expiry travel in X-Cycles-Key-Id / X-Cycles-Key-Expires-At. */
export const TenantIntrospection = z.strictObject({
  authenticated: z.literal(true),
  auth_type: z.literal('tenant'),
  permissions: z.array(Permission),
  capabilities: Capabilities,
  tenant_id: z.string(),
});
export const Introspection = z.discriminatedUnion('auth_type', [
  z.strictObject({
    authenticated: z.literal(true),
    auth_type: z.literal('admin'),
    /** ["*"] for the bootstrap admin key; a named operator credential's own `admin:*` names. */
    permissions: z.array(z.union([z.literal('*'), Permission])),
    capabilities: Capabilities,
  }),
  TenantIntrospection,
]);

export const Health = z.strictObject({ status: z.literal('UP') });
/** Answered with 503, so probes see it without parsing. */
export const HealthDown = z.strictObject({ status: z.literal('DOWN') });

/** This document: only what a client needs to recognise it. */
export const OpenApiDocument = z.looseObject({
  openapi: z.string(),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: JsonObject,
});

// ---- admin --------------------------------------------------------------------------------

/**
 * Ours, on a tenant and a key, only when one is set (docs/decisions.md § Rate limits): a client
 * that never sets them never sees the field.
 */
const RateLimits = z.strictObject({
  max_requests_per_minute: z.number().int().optional(),
  max_reservations_per_minute: z.number().int().optional(),
  max_commits_per_minute: z.number().int().optional(),
});

/** The reference's Tenant, each optional field only when set; `unbudgeted_scopes` and `rate_limits` (ours) only when set. */
export const Tenant = z.strictObject({
  tenant_id: z.string(),
  name: z.string(),
  status: z.enum(TENANT_STATUSES),
  parent_tenant_id: z.string().optional(),
  default_commit_overage_policy: z
    .enum(['REJECT', 'ALLOW_IF_AVAILABLE', 'ALLOW_WITH_OVERDRAFT'])
    .optional(),
  default_reservation_ttl_ms: z.number().int().optional(),
  max_reservation_ttl_ms: z.number().int().optional(),
  max_reservation_extensions: z.number().int().optional(),
  reservation_expiry_policy: z.enum(EXPIRY_POLICIES).optional(),
  unbudgeted_scopes: z.enum(UNBUDGETED_SCOPES).optional(),
  rate_limits: RateLimits.optional(),
  metadata: z.record(z.string(), z.string()).optional(),
  created_at: Timestamp,
  updated_at: Timestamp.optional(),
  suspended_at: Timestamp.optional(),
  closed_at: Timestamp.optional(),
});
export const TenantListResponse = page('tenants', Tenant);

const apiKeyFields = {
  key_id: z.string(),
  tenant_id: z.string(),
  key_prefix: z.string(),
  name: z.string(),
  description: z.string().optional(),
  permissions: z.array(Permission),
  created_at: Timestamp,
  expires_at: Timestamp.optional(),
  rate_limits: RateLimits.optional(),
};
/** Never the secret or its hash. */
export const ApiKey = z.strictObject({
  ...apiKeyFields,
  status: z.enum(['ACTIVE', 'REVOKED', 'EXPIRED']),
  revoked_at: Timestamp.optional(),
  revoked_reason: z.string().optional(),
});
export const ApiKeyListResponse = page('keys', ApiKey);
/** The one answer that carries the secret. */
export const ApiKeyCreateResponse = z.strictObject({ ...apiKeyFields, key_secret: z.string() });

export const KeyValidation = z.discriminatedUnion('valid', [
  z.strictObject({
    valid: z.literal(true),
    tenant_id: z.string(),
    key_id: z.string(),
    permissions: z.array(Permission),
    expires_at: Timestamp.optional(),
  }),
  z.strictObject({
    valid: z.literal(false),
    reason: z.enum(['KEY_NOT_FOUND', 'KEY_EXPIRED', 'KEY_REVOKED']),
  }),
]);

export const AuditLogEntry = z.strictObject({
  log_id: z.string(),
  timestamp: Timestamp,
  tenant_id: z.string(),
  /** Absent when the operator's admin key acted. */
  key_id: z.string().optional(),
  operation: z.enum(AUDIT_OPERATION_NAMES as [string, ...string[]]),
  resource_type: z.enum(AUDIT_RESOURCE_TYPES),
  resource_id: z.string(),
  request_id: z.string(),
  trace_id: z
    .string()
    .regex(/^[0-9a-f]{32}$/)
    .optional(),
  status: z.literal([200, 201, 204]).meta({ type: 'integer' }),
  metadata: z.strictObject({
    /** `admin` (the bootstrap admin key), or the key id of an operator credential or tenant key. */
    actor: z.string(),
    actor_type: z.enum(['admin', 'api_key', 'admin_on_behalf_of', 'system']),
    /** A named operator credential's name: the person who made the change. */
    actor_name: z.string().optional(),
    before: JsonObject.optional(),
    after: JsonObject.optional(),
    detail: JsonObject.optional(),
  }),
});
export const AuditLogListResponse = page('logs', AuditLogEntry);

/** A rolling budget's current period and its rule; all absent on a budget that does not roll. */
const periodFields = {
  period: z.enum(PERIOD_KINDS).optional(),
  period_anchor_day: z.number().int().min(1).max(28).optional(),
  period_start: Timestamp.optional(),
  period_end: Timestamp.optional(),
};

/** The cap of one reservation (ours), only when the budget has one. */
const maxReservationField = {
  max_reservation_amount: Amount.optional().describe(
    'Ours (x-extension budget-reservations): the most one reservation may hold on this budget; a larger estimate is refused with 409 BUDGET_EXCEEDED (details.reason MAX_RESERVATION_AMOUNT_EXCEEDED).',
  ),
};

/** Budget event thresholds (ours), only when not the default [50, 80, 100]. */
const thresholdsField = {
  thresholds: z.array(z.number().int().min(1).max(100)).max(MAX_THRESHOLDS).optional(),
};

/** POST /v1/admin/budgets: the new ledger. */
export const Budget = z.strictObject({
  tenant_id: z.string(),
  ...balanceFields,
  unit: Unit,
  ...periodFields,
  ...thresholdsField,
  ...maxReservationField,
  created_at: Timestamp,
});

export const BudgetLedger = z.strictObject({
  ledger_id: z.string(),
  tenant_id: z.string(),
  ...balanceFields,
  unit: Unit,
  status: z.enum(BUDGET_STATUSES),
  ...periodFields,
  caps: Caps.optional(),
  caps_when_remaining_below_bps: z.number().int().min(1).max(BPS).optional(),
  ...thresholdsField,
  shards: z
    .number()
    .int()
    .min(2)
    .max(MAX_SHARDS)
    .optional()
    .describe(
      'Ours: the escrow shards the budget is split into (docs/scaling.md), only when more than one — set by the operator (`shards`) or grown by the service under contention (audited as the system).',
    ),
  ...maxReservationField,
  created_at: Timestamp,
  updated_at: Timestamp.optional(),
});
export const BudgetListResponse = page('ledgers', BudgetLedger);

/** A rolling budget's closed period: what was allocated, spent and is still held there. */
export const ClosedPeriod = z.strictObject({
  period_start: Timestamp,
  period_end: Timestamp,
  ...balanceFields,
});
export const ClosedPeriodListResponse = page('periods', ClosedPeriod).describe(
  'The periods of a rolling budget that have ended, newest first, each with its final balance. The current period is the budget itself (GET /v1/admin/budgets/lookup), so a budget still in its first period, or one that does not roll over, answers `periods: []`.',
);

export const FundResponse = z.strictObject({
  operation: z.enum(FUND_OPERATIONS),
  scope: z.string(),
  unit: Unit,
  previous_allocated: Amount,
  new_allocated: Amount,
  previous_remaining: SignedAmount,
  new_remaining: SignedAmount,
  previous_debt: Amount,
  new_debt: Amount,
  balance: Balance,
});

// ---- Ours: x-extension budget-reservations (docs/decisions.md § Charges, § Refunds,
// § Estimate accuracy). New operations only: no answer of the protocol changes. ----------------

export const ChargeResponse = z
  .strictObject({
    charge_id: z.string(),
    reservation_id: z.string(),
    sequence: z
      .number()
      .int()
      .min(1)
      .describe('1 for the reservation’s first charge, then 2, 3, …'),
    amount: Amount,
    charged_total: Amount.describe(
      'What the reservation’s charges spent so far, this one included',
    ),
    held: Amount.describe('What is left of the hold on each scope'),
    balances: z.array(Balance),
  })
  .describe('A charge of part of the actual; the reservation stays ACTIVE');

export const Charge = z.strictObject({
  charge_id: z.string(),
  sequence: z.number().int().min(1),
  amount: Amount,
  created_at_ms: EpochMs,
  metrics: JsonObject.optional(),
  metadata: JsonObject.optional(),
});

export const ChargeListResponse = z.strictObject({
  reservation_id: z.string(),
  status: ReservationStatus,
  charged_total: Amount,
  held: Amount.describe('What the reservation still holds on each scope: 0 once not ACTIVE'),
  refunded_total: Amount,
  charges: z.array(Charge),
  has_more: z.boolean(),
  next_cursor: z.string().optional(),
});

export const Delegation = z.strictObject({
  reservation_id: z.string(),
  status: ReservationStatus,
  depth: Count.describe('1 for a child of a root reservation, 2 for a grandchild, …'),
  reserved: Amount.describe('What the delegation carved out of the parent’s hold'),
  held: Amount.describe('What it still holds: 0 once not ACTIVE'),
  charged: Amount.describe('What it spent: its commit’s actual, or its charges so far'),
  scope_path: z.string(),
  created_at_ms: EpochMs,
  expires_at_ms: EpochMs,
  active_delegations: Count.describe('Its own ACTIVE children'),
});

export const DelegationListResponse = z.strictObject({
  reservation_id: z.string(),
  status: ReservationStatus,
  held: Amount.describe('What the reservation itself still holds: 0 once not ACTIVE'),
  delegations: z.array(Delegation),
  has_more: z.boolean(),
  next_cursor: z.string().optional(),
});

const refundFields = {
  refund_id: z.string(),
  amount: Amount,
  refunded_total: Amount.describe('Refunded so far, this refund included'),
  refundable: Amount.describe('What is left to refund'),
  balances: z.array(Balance),
};
export const RefundResponse = z.union([
  z.strictObject({ reservation_id: z.string(), ...refundFields }),
  z.strictObject({ event_id: z.string(), ...refundFields }),
]);

const accuracyFigures = {
  settled: Count.describe(
    'Reservations settled with an actual: committed, or released or expired after charges',
  ),
  estimate_total: Amount.describe('Σ of their estimates'),
  actual_total: Amount.describe('Σ of their actuals'),
  actual_to_estimate: z.number().min(0).optional().describe('Σ actual ÷ Σ estimate'),
  histogram: z
    .array(Count)
    .describe('How many fell in each bucket of actual ÷ estimate (ratio_bounds; the last: above)'),
  coverage_95_ratio: z
    .number()
    .optional()
    .describe('The smallest bucket bound that 95 % of actual ÷ estimate fell under'),
  suggested_estimate: Amount.optional().describe(
    'The mean estimate × coverage_95_ratio: an estimate that would have covered 95 % of the actuals',
  ),
  held_unspent_unit_seconds: z
    .number()
    .min(0)
    .describe('Σ (estimate − actual)⁺ × time held: budget kept from everyone else, never spent'),
  released: Count.describe('Released without spending anything'),
  expired: Count.describe('Expired without spending anything'),
  last_settled_at: Timestamp.optional(),
};
export const AccuracyFigures = z.strictObject(accuracyFigures);

export const EstimateAccuracyResponse = z
  .strictObject({
    scope: z.string(),
    unit: Unit,
    ratio_bounds: z
      .array(z.number())
      .describe('Upper bounds (inclusive) of the histogram buckets of actual ÷ estimate'),
    kinds: z.array(z.strictObject({ kind: z.string(), ...accuracyFigures })),
    other: AccuracyFigures.describe('Every kind without figures of its own'),
    total: AccuracyFigures,
  })
  .describe(
    'How the estimates of the reservations settled on this budget compared with their actuals, per action kind (the 16 most recent kinds; the rest in other)',
  );
