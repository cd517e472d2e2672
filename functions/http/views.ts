import type { Amount } from '../domain/amounts.js';
import { type ApiKey, keyStatus } from '../domain/api-keys.js';
import type { AuditRecord } from '../domain/audit.js';
import {
  type Budget,
  type BudgetRecord,
  balanceOf,
  budgetKey,
  isOverLimit,
  type Ledger,
  shardCount,
} from '../domain/budget.js';
import type { Caps } from '../domain/caps.js';
import type { DomainError } from '../domain/errors.js';
import { derivedId } from '../domain/fingerprint.js';
import { type RequestRateLimits, wireRateLimits } from '../domain/rate-limits.js';
import {
  affectedScopes,
  type Reservation,
  ReservationExpiredError,
} from '../domain/reservation.js';
import type { Tenant } from '../domain/tenant.js';
import type { Introspection, KeyValidation, TenantIntrospection } from '../use-cases/api-keys.js';
import type { Funded } from '../use-cases/budgets.js';
import type { Decision } from '../use-cases/decide.js';
import type { EventApplied } from '../use-cases/events.js';
import type { Page } from '../use-cases/reads.js';
import type { DryRun, Lease, Reserved } from '../use-cases/reservations.js';
import type { Committed, Extended, Released } from '../use-cases/settlements.js';
import { Reply } from './reply.js';

// Domain results → wire JSON. Exactly SPEC's fields: optional ones are omitted, never null.
// A replay renders the stored result through the same view, so it answers the same bytes.

const amountView = (a: Amount) => ({ unit: a.unit, amount: a.amount });
const ledgerAmount = (l: Ledger, amount: number) => ({ unit: l.unit, amount });

/** SPEC § Balance: exactly nine fields; `scope` is the full path, like `scope_path`. */
export function balanceView(l: Ledger) {
  return {
    scope: l.scope,
    scope_path: l.scope,
    remaining: ledgerAmount(l, l.remaining),
    allocated: ledgerAmount(l, l.allocated),
    spent: ledgerAmount(l, l.spent),
    reserved: ledgerAmount(l, l.reserved),
    debt: ledgerAmount(l, l.debt),
    overdraft_limit: ledgerAmount(l, l.overdraftLimit),
    is_over_limit: isOverLimit(l),
  };
}

function subjectView(s: Reservation['subject']) {
  return {
    ...(s.tenant !== undefined && { tenant: s.tenant }),
    ...(s.workspace !== undefined && { workspace: s.workspace }),
    ...(s.app !== undefined && { app: s.app }),
    ...(s.workflow !== undefined && { workflow: s.workflow }),
    ...(s.agent !== undefined && { agent: s.agent }),
    ...(s.toolset !== undefined && { toolset: s.toolset }),
    ...(s.dimensions !== undefined && { dimensions: s.dimensions }),
  };
}

function actionView(a: Reservation['action']) {
  return { kind: a.kind, name: a.name, ...(a.tags !== undefined && { tags: a.tags }) };
}

/** SPEC § Reservation; `committed`, `finalized_at_ms` and `metadata` only when they exist. */
export function reservationView(r: Reservation, { withMetadata }: { withMetadata: boolean }) {
  return {
    reservation_id: r.reservationId,
    status: r.status,
    idempotency_key: r.idempotencyKey,
    subject: subjectView(r.subject),
    action: actionView(r.action),
    reserved: amountView(r.reserved),
    ...(r.committed && { committed: amountView(r.committed) }),
    created_at_ms: r.createdAtMs,
    expires_at_ms: r.expiresAtMs,
    ...(r.finalizedAtMs !== undefined && { finalized_at_ms: r.finalizedAtMs }),
    scope_path: r.scopePath,
    affected_scopes: affectedScopes(r),
    ...(withMetadata && r.metadata !== undefined && { metadata: r.metadata }),
  };
}

export const reservationDetailView = (r: Reservation) => reservationView(r, { withMetadata: true });

/** A reservation read answered 410 carries the reservation itself in its details. */
export const expiredReservationDetails = (refusal: DomainError) =>
  refusal instanceof ReservationExpiredError
    ? { reservation: reservationDetailView(refusal.reservation) }
    : refusal.details;

/** SPEC § Caps: only the constraints set. */
export const capsView = (c: Caps) => ({
  ...(c.maxTokens !== undefined && { max_tokens: c.maxTokens }),
  ...(c.maxStepsRemaining !== undefined && { max_steps_remaining: c.maxStepsRemaining }),
  ...(c.toolAllowlist !== undefined && { tool_allowlist: c.toolAllowlist }),
  ...(c.toolDenylist !== undefined && { tool_denylist: c.toolDenylist }),
  ...(c.cooldownMs !== undefined && { cooldown_ms: c.cooldownMs }),
});

/** SPEC § POST /v1/reservations: the live reservation, or a dry run's decision. */
export function reservationCreatedView(r: (Reserved & Lease) | DryRun) {
  const placement = {
    affected_scopes: r.affectedScopes,
    scope_path: r.scopePath,
    reserved: amountView(r.reserved),
    balances: r.balances.map(balanceView),
  };
  if (r.kind === 'dryRun') return { ...decisionFields(r.refusal, r.caps), ...placement };
  return {
    reservation_id: r.reservationId,
    ...decisionFields(undefined, r.caps),
    expires_at_ms: r.expiresAtMs,
    remaining_ttl_ms: r.remainingTtlMs,
    ...placement,
  };
}

/**
 * DENY carries reason_code, ALLOW_WITH_CAPS its caps, ALLOW neither (never null): the
 * reference's "caps present only when decision=ALLOW_WITH_CAPS; MUST be absent otherwise".
 */
const decisionFields = (refusal: string | undefined, caps: Caps | undefined) =>
  refusal
    ? { decision: 'DENY' as const, reason_code: refusal }
    : caps
      ? { decision: 'ALLOW_WITH_CAPS' as const, caps: capsView(caps) }
      : { decision: 'ALLOW' as const };

export const decisionView = (d: Decision) => ({
  ...decisionFields(d.refusal, d.caps),
  affected_scopes: d.affectedScopes,
});

export const committedView = (c: Committed) => ({
  status: c.status,
  charged: amountView(c.charged),
  released: amountView(c.released),
  balances: c.balances.map(balanceView),
});

export const releasedView = (r: Released) => ({
  status: r.status,
  released: amountView(r.released),
  balances: r.balances.map(balanceView),
});

export const extendedView = (e: Extended & Lease) => ({
  status: e.status,
  expires_at_ms: e.expiresAtMs,
  remaining_ttl_ms: e.remainingTtlMs,
  balances: e.balances.map(balanceView),
});

export const eventView = (e: EventApplied) => ({
  status: 'APPLIED' as const,
  event_id: e.eventId,
  balances: e.balances.map(balanceView),
});

/** Every listing ends the same way: `has_more`, and `next_cursor` only when there is more. */
export const pageTail = (p: Page<unknown>) => ({
  has_more: p.nextCursor !== undefined,
  ...(p.nextCursor !== undefined && { next_cursor: p.nextCursor }),
});

export const reservationPageView = (p: Page<Reservation>) => ({
  reservations: p.items.map((r) => reservationView(r, { withMetadata: false })),
  ...pageTail(p),
});

export const balancePageView = (p: Page<Ledger>) => ({
  balances: p.items.map(balanceView),
  ...pageTail(p),
});

// ---- admin ----------------------------------------------------------------------------------

/** A tenant's or key's limits (ours): the field only when one is set. */
const rateLimitsField = (limits: RequestRateLimits | undefined) => {
  const wire = wireRateLimits(limits);
  return wire ? { rate_limits: wire } : {};
};

/** The reference's Tenant: each setting only when set, `unbudgeted_scopes` (ours) only when SKIP. */
export const tenantView = (t: Tenant) => {
  const s = t.settings ?? {};
  return {
    tenant_id: t.tenantId,
    name: t.name,
    status: t.status,
    ...(t.parentTenantId !== undefined && { parent_tenant_id: t.parentTenantId }),
    ...(s.defaultCommitOveragePolicy && {
      default_commit_overage_policy: s.defaultCommitOveragePolicy,
    }),
    ...(s.defaultReservationTtlMs !== undefined && {
      default_reservation_ttl_ms: s.defaultReservationTtlMs,
    }),
    ...(s.maxReservationTtlMs !== undefined && { max_reservation_ttl_ms: s.maxReservationTtlMs }),
    ...(s.maxReservationExtensions !== undefined && {
      max_reservation_extensions: s.maxReservationExtensions,
    }),
    ...(s.reservationExpiryPolicy && { reservation_expiry_policy: s.reservationExpiryPolicy }),
    ...(s.unbudgetedScopes === 'SKIP' && { unbudgeted_scopes: s.unbudgetedScopes }),
    ...rateLimitsField(t.rateLimits),
    ...(t.metadata !== undefined && { metadata: { ...t.metadata } }),
    created_at: t.createdAt,
    ...(t.updatedAt !== undefined && { updated_at: t.updatedAt }),
    ...(t.suspendedAt !== undefined && { suspended_at: t.suspendedAt }),
    ...(t.closedAt !== undefined && { closed_at: t.closedAt }),
  };
};

export const tenantPageView = (p: Page<Tenant>) => ({
  tenants: p.items.map(tenantView),
  ...pageTail(p),
});

/** The reference's ApiKey: never the secret or its hash. `expires_at` only when the key has one. */
export const apiKeyView = (key: ApiKey, now: number) => ({
  key_id: key.keyId,
  tenant_id: key.tenant,
  key_prefix: key.keyPrefix,
  name: key.name,
  ...(key.description !== undefined && { description: key.description }),
  permissions: key.permissions,
  status: keyStatus(key, now),
  created_at: key.createdAt,
  ...(key.expiresAt !== undefined && { expires_at: key.expiresAt }),
  ...rateLimitsField(key.rateLimits),
  ...(key.revokedAt !== undefined && { revoked_at: key.revokedAt }),
  ...(key.revokedReason !== undefined && { revoked_reason: key.revokedReason }),
});

export const apiKeyPageView = (p: Page<ApiKey>, now: number) => ({
  keys: p.items.map((k) => apiKeyView(k, now)),
  ...pageTail(p),
});

/**
 * The reference's AuditLogEntry. Only successful changes are recorded (in their own
 * transaction), so `status` is the success status of the operation; the record before and
 * after, and the operation's detail, travel in `metadata`.
 */
export const auditRecordView = (r: AuditRecord) => ({
  log_id: r.logId,
  timestamp: new Date(r.atMs).toISOString(),
  tenant_id: r.tenant,
  // A tenant key's id, or a named operator credential's (its name beside it).
  ...((r.actorType === 'api_key' || r.actorName !== undefined) && { key_id: r.actor }),
  operation: r.operation,
  resource_type: r.resourceType,
  resource_id: r.resourceId,
  request_id: r.requestId,
  ...(r.traceId !== undefined && { trace_id: r.traceId }),
  status: r.operation.startsWith('create')
    ? (201 as const)
    : r.operation.startsWith('delete')
      ? (204 as const)
      : (200 as const),
  metadata: {
    actor: r.actor,
    actor_type: r.actorType,
    ...(r.actorName !== undefined && { actor_name: r.actorName }),
    ...(r.before !== undefined && { before: r.before }),
    ...(r.after !== undefined && { after: r.after }),
    ...(r.detail !== undefined && { detail: r.detail }),
  },
});

export const auditPageView = (p: Page<AuditRecord>) => ({
  logs: p.items.map(auditRecordView),
  ...pageTail(p),
});

/** The secret appears in this one response and nowhere else. */
export const createdApiKeyView = ({ key, secret }: { key: ApiKey; secret: string }) => ({
  key_id: key.keyId,
  key_prefix: key.keyPrefix,
  key_secret: secret,
  tenant_id: key.tenant,
  name: key.name,
  ...(key.description !== undefined && { description: key.description }),
  permissions: key.permissions,
  created_at: key.createdAt,
  ...(key.expiresAt !== undefined && { expires_at: key.expiresAt }),
  ...rateLimitsField(key.rateLimits),
});

export const keyValidationView = (v: KeyValidation) =>
  v.valid
    ? {
        valid: true as const,
        tenant_id: v.key.tenant,
        key_id: v.key.keyId,
        permissions: v.key.permissions,
        ...(v.key.expiresAt !== undefined && { expires_at: v.key.expiresAt }),
      }
    : { valid: false as const, reason: v.reason };

/**
 * The reference's AuthIntrospectResponse, exactly: it has no field for the key's id or expiry,
 * and clients validate it closed, so those travel in headers (docs/decisions.md).
 */
export function introspectionView(i: Introspection) {
  if (i.authType === 'admin') {
    const { operator } = i;
    const body = {
      authenticated: true as const,
      auth_type: 'admin' as const,
      permissions: operator ? [...operator.permissions] : ['*' as const],
      capabilities: i.capabilities,
    };
    // A named operator credential is a key: its id (and expiry) travel as a tenant key's do.
    return operator
      ? new Reply(undefined, body, {
          'x-cycles-key-id': operator.keyId,
          ...(operator.keyExpiresAt !== undefined && {
            'x-cycles-key-expires-at': operator.keyExpiresAt,
          }),
        })
      : body;
  }
  return tenantIntrospectionView(i);
}

/** A tenant key's introspection (the runtime server's, where only tenant keys authenticate). */
export function tenantIntrospectionView(i: TenantIntrospection) {
  const body = {
    authenticated: true as const,
    auth_type: 'tenant' as const,
    permissions: i.key.permissions,
    capabilities: i.capabilities,
    tenant_id: i.key.tenant,
  };
  return new Reply(undefined, body, {
    'x-cycles-key-id': i.key.keyId,
    ...(i.key.keyExpiresAt !== undefined && { 'x-cycles-key-expires-at': i.key.keyExpiresAt }),
  });
}

/** A rolling budget's period: the reference's `period_start` / `period_end`, and its rule. */
const periodView = ({ period: p }: Budget) =>
  p && {
    period: p.spec.kind,
    ...(p.spec.anchorDay !== undefined && { period_anchor_day: p.spec.anchorDay }),
    period_start: new Date(p.start).toISOString(),
    period_end: new Date(p.end).toISOString(),
  };

/** A budget just created. */
export const budgetView = ({ tenant, budget, createdAt }: BudgetRecord) => ({
  tenant_id: tenant,
  ...balanceView(balanceOf(budget)),
  unit: budget.ref.unit,
  ...periodView(budget),
  ...(budget.thresholds && { thresholds: [...budget.thresholds] }),
  ...maxReservationView(budget),
  created_at: createdAt,
});

/** The cap of one reservation (ours, the admin plane only), when the budget has one. */
const maxReservationView = (b: Budget) =>
  b.maxReservationAmount !== undefined && {
    max_reservation_amount: { unit: b.ref.unit, amount: b.maxReservationAmount },
  };

/** The reference's BudgetLedger; `caps` (ours) only when the budget has caps. */
export const budgetLedgerView = ({ tenant, budget: b, createdAt, updatedAt }: BudgetRecord) => ({
  ledger_id: derivedId('ldg', tenant, budgetKey(b.ref)),
  tenant_id: tenant,
  ...balanceView(balanceOf(b)),
  unit: b.ref.unit,
  status: b.status,
  ...periodView(b),
  ...(b.caps && {
    caps: capsView(b.caps.caps),
    ...(b.caps.belowRemainingBps !== undefined && {
      caps_when_remaining_below_bps: b.caps.belowRemainingBps,
    }),
  }),
  // Ours, only when not the default [50, 80, 100] (docs/decisions.md § Events and webhooks).
  ...(b.thresholds && { thresholds: [...b.thresholds] }),
  // Ours, only when split (set by the operator or grown under contention: docs/scaling.md).
  ...(shardCount(b) > 1 && { shards: shardCount(b) }),
  ...maxReservationView(b),
  created_at: createdAt,
  ...(updatedAt !== undefined && { updated_at: updatedAt }),
});

/** A rolling budget's closed periods, newest first: what was allocated, spent and held in each. */
export const closedPeriodPageView = (p: Page<Budget>) => ({
  periods: p.items.map((b) => ({
    period_start: new Date(b.period?.start ?? 0).toISOString(),
    period_end: new Date(b.period?.end ?? 0).toISOString(),
    ...balanceView(balanceOf(b)),
  })),
  ...pageTail(p),
});

export const budgetPageView = (p: Page<BudgetRecord>) => ({
  ledgers: p.items.map(budgetLedgerView),
  ...pageTail(p),
});

export const fundedView = ({ operation, before, after }: Funded) => ({
  operation,
  scope: after.scope,
  unit: after.unit,
  previous_allocated: ledgerAmount(before, before.allocated),
  new_allocated: ledgerAmount(after, after.allocated),
  previous_remaining: ledgerAmount(before, before.remaining),
  new_remaining: ledgerAmount(after, after.remaining),
  previous_debt: ledgerAmount(before, before.debt),
  new_debt: ledgerAmount(after, after.debt),
  balance: balanceView(after),
});

/** Health answers 503 when DOWN, so load balancers and probes see it without parsing. */
export const healthView = (status: 'UP' | 'DOWN') =>
  status === 'UP' ? { status } : new Reply(503, { status });
