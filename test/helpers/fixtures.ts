import { randomUUID } from 'node:crypto';
import type { LocalStack } from '../../infra/local/stack.js';
import { type Json, type Response, request } from './http.js';
import { ADMIN_KEY } from './stack.js';

export type Unit = 'USD_MICROCENTS' | 'TOKENS' | 'CREDITS' | 'RISK_POINTS';

export interface GivenTenant {
  readonly tenant: string;
  readonly key: string;
  readonly keyId: string;
  /** Headers for the runtime server and tenant-key admin calls. */
  readonly headers: Record<string, string>;
  /**
   * Headers the ledger audit reads balances with (scaffold.ts), never used by tests: the key
   * under test when it has balances:read, else a second, read-only key made for the audit.
   */
  readonly auditor: Record<string, string>;
}

export const adminHeaders = { 'x-admin-api-key': ADMIN_KEY };

/** The tenants givenTenant made on each stack that the ledger audit has not taken yet. */
const unaudited = new Map<LocalStack, GivenTenant[]>();

/** The tenants made on `stack` since the last call (scaffold.ts audits them). */
export const newTenantsOn = (stack: LocalStack): GivenTenant[] =>
  unaudited.get(stack)?.splice(0) ?? [];

async function createKey(stack: LocalStack, tenant: string, name: string, permissions?: string[]) {
  const key = await request('POST', `${stack.adminUrl}/v1/admin/api-keys`, {
    headers: adminHeaders,
    body: { tenant_id: tenant, name, ...(permissions && { permissions }) },
  });
  if (key.status !== 201) throw new Error(`api key: ${key.status} ${JSON.stringify(key.body)}`);
  return { secret: String(key.body.key_secret), keyId: String(key.body.key_id) };
}

/**
 * A fresh tenant and an API key with the given (default: all) permissions, via the admin API.
 * The tenant is registered for the ledger audit of the stack's scaffold.
 */
export async function givenTenant(stack: LocalStack, permissions?: string[]): Promise<GivenTenant> {
  const tenant = `t-${randomUUID().slice(0, 12)}`;
  const created = await request('POST', `${stack.adminUrl}/v1/admin/tenants`, {
    headers: adminHeaders,
    body: { tenant_id: tenant, name: `Tenant ${tenant}` },
  });
  if (created.status !== 201)
    throw new Error(`tenant: ${created.status} ${JSON.stringify(created.body)}`);
  // A key that may read balances serves the audit too; one that may not gets a second key for
  // it (only then: a key for every tenant costs the run a tenth of its CPU).
  const readsBalances = !permissions || permissions.includes('balances:read');
  const [key, auditor] = await Promise.all([
    createKey(stack, tenant, 'test key', permissions),
    readsBalances ? undefined : createKey(stack, tenant, 'ledger auditor', ['balances:read']),
  ]);
  const given = {
    tenant,
    key: key.secret,
    keyId: key.keyId,
    headers: { 'x-service-api-key': key.secret },
    auditor: { 'x-service-api-key': (auditor ?? key).secret },
  };
  unaudited.set(stack, [...(unaudited.get(stack) ?? []), given]);
  return given;
}

/**
 * A fresh tenant and key, kept out of the ledger audit: a test that closes it revokes the key the
 * audit would read with.
 */
export async function givenClosableTenant(
  stack: LocalStack,
  permissions?: string[],
): Promise<GivenTenant> {
  const tenant = `c-${randomUUID().slice(0, 12)}`;
  const created = await request('POST', `${stack.adminUrl}/v1/admin/tenants`, {
    headers: adminHeaders,
    body: { tenant_id: tenant, name: `Tenant ${tenant}` },
  });
  if (created.status !== 201)
    throw new Error(`tenant: ${created.status} ${JSON.stringify(created.body)}`);
  const key = await createKey(stack, tenant, 'agent', permissions);
  const headers = { 'x-service-api-key': key.secret };
  return { tenant, key: key.secret, keyId: key.keyId, headers, auditor: headers };
}

/**
 * A budget ledger at `scope` (relative paths get the tenant root prepended), created by the
 * operator's admin key: the key under test may lack budgets:write, as an agent's key should.
 */
export async function givenBudget(
  stack: LocalStack,
  t: GivenTenant,
  scope: string,
  allocated: number,
  options: {
    unit?: Unit;
    overdraftLimit?: number;
    shards?: number;
    /** SPEC's Caps object, as the wire carries it. */
    caps?: Json;
    /** Soft landing: caps only once remaining after a hold is below this many basis points. */
    capsWhenRemainingBelowBps?: number;
    /** Ours: the most one reservation may hold on it. */
    maxReservationAmount?: number;
  } = {},
): Promise<Json> {
  const unit = options.unit ?? 'USD_MICROCENTS';
  const full = scope.startsWith('tenant:') ? scope : scopeOf(t, scope);
  const res = await request('POST', `${stack.adminUrl}/v1/admin/budgets`, {
    headers: adminHeaders,
    body: {
      scope: full,
      unit,
      allocated: { unit, amount: allocated },
      ...(options.overdraftLimit !== undefined && {
        overdraft_limit: { unit, amount: options.overdraftLimit },
      }),
      ...(options.shards !== undefined && { shards: options.shards }),
      ...(options.caps !== undefined && { caps: options.caps }),
      ...(options.capsWhenRemainingBelowBps !== undefined && {
        caps_when_remaining_below_bps: options.capsWhenRemainingBelowBps,
      }),
      ...(options.maxReservationAmount !== undefined && {
        max_reservation_amount: { unit, amount: options.maxReservationAmount },
      }),
    },
  });
  if (res.status !== 201) throw new Error(`budget: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** USD budgets by relative scope ('' is the tenant root), one after the other. */
export async function givenBudgets(
  stack: LocalStack,
  t: GivenTenant,
  budgets: Record<string, number | { allocated: number; overdraftLimit: number }>,
): Promise<void> {
  for (const [scope, b] of Object.entries(budgets)) {
    if (typeof b === 'number') await givenBudget(stack, t, scope, b);
    else await givenBudget(stack, t, scope, b.allocated, { overdraftLimit: b.overdraftLimit });
  }
}

/** A fresh tenant (givenTenant) with USD budgets by relative scope ('' is the tenant root). */
export async function givenTenantWith(
  stack: LocalStack,
  budgets: Parameters<typeof givenBudgets>[2],
  permissions?: string[],
): Promise<GivenTenant> {
  const t = await givenTenant(stack, permissions);
  await givenBudgets(stack, t, budgets);
  return t;
}

/** POST …/fund on the USD ledger at `scope` (relative to the tenant root), with a fresh key. */
export const fund = (
  stack: LocalStack,
  t: GivenTenant,
  scope: string,
  operation: 'CREDIT' | 'RESET' | 'REPAY_DEBT',
  amount: number,
): Promise<Response> =>
  request(
    'POST',
    `${stack.adminUrl}/v1/admin/budgets/${encodeURIComponent(scopeOf(t, scope))}/USD_MICROCENTS/fund`,
    { headers: t.headers, body: { operation, amount: usd(amount), idempotency_key: randomUUID() } },
  );

/** A reservation request body with sensible defaults. */
export function reserveBody(overrides: Json = {}): Json {
  return {
    idempotency_key: randomUUID(),
    subject: { workspace: 'w' },
    action: { kind: 'llm.completion', name: 'model-x' },
    estimate: { unit: 'USD_MICROCENTS', amount: 100 },
    ...overrides,
  };
}

export const usd = (amount: number) => ({ unit: 'USD_MICROCENTS', amount });
/** Real time: throttles and polls only; tests move a `testClock` rather than wait for expiry. */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A scope of the tenant from a path relative to its root ('' is the root). */
export const scopeOf = (t: GivenTenant, rel: string) => `tenant:${t.tenant}${rel ? `/${rel}` : ''}`;
