import { randomUUID } from 'node:crypto';
import type { LocalStack } from '../../infra/local/stack.js';
import { type Json, request } from './http.js';
import { ADMIN_KEY } from './stack.js';

export type Unit = 'USD_MICROCENTS' | 'TOKENS' | 'CREDITS' | 'RISK_POINTS';

export interface GivenTenant {
  readonly tenant: string;
  readonly key: string;
  readonly keyId: string;
  /** Headers for the runtime server and tenant-key admin calls. */
  readonly headers: Record<string, string>;
}

export const adminHeaders = { 'x-admin-api-key': ADMIN_KEY };

/** A fresh tenant and an API key with the given (default: all) permissions, via the admin API. */
export async function givenTenant(stack: LocalStack, permissions?: string[]): Promise<GivenTenant> {
  const tenant = `t-${randomUUID().slice(0, 12)}`;
  const created = await request('POST', `${stack.adminUrl}/v1/admin/tenants`, {
    headers: adminHeaders,
    body: { tenant_id: tenant, name: `Tenant ${tenant}` },
  });
  if (created.status !== 201)
    throw new Error(`tenant: ${created.status} ${JSON.stringify(created.body)}`);
  const key = await request('POST', `${stack.adminUrl}/v1/admin/api-keys`, {
    headers: adminHeaders,
    body: { tenant_id: tenant, name: 'test key', ...(permissions && { permissions }) },
  });
  if (key.status !== 201) throw new Error(`api key: ${key.status} ${JSON.stringify(key.body)}`);
  const secret = String(key.body.key_secret);
  return {
    tenant,
    key: secret,
    keyId: String(key.body.key_id),
    headers: { 'x-service-api-key': secret },
  };
}

/** A budget ledger at `scope` (relative paths get the tenant root prepended). */
export async function givenBudget(
  stack: LocalStack,
  t: GivenTenant,
  scope: string,
  allocated: number,
  options: { unit?: Unit; overdraftLimit?: number } = {},
): Promise<Json> {
  const unit = options.unit ?? 'USD_MICROCENTS';
  const full = scope.startsWith('tenant:')
    ? scope
    : `tenant:${t.tenant}${scope ? `/${scope}` : ''}`;
  const res = await request('POST', `${stack.adminUrl}/v1/admin/budgets`, {
    headers: t.headers,
    body: {
      scope: full,
      unit,
      allocated: { unit, amount: allocated },
      ...(options.overdraftLimit !== undefined && {
        overdraft_limit: { unit, amount: options.overdraftLimit },
      }),
    },
  });
  if (res.status !== 201) throw new Error(`budget: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** The balances of a tenant's ledgers by scope (include_children from the root). */
export async function balancesOf(stack: LocalStack, t: GivenTenant): Promise<Map<string, Json>> {
  const out = new Map<string, Json>();
  let cursor: string | undefined;
  do {
    const res = await request<{ balances: Json[]; next_cursor?: string }>(
      'GET',
      `${stack.runtimeUrl}/v1/balances?tenant=${t.tenant}&include_children=true&limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      { headers: t.headers },
    );
    for (const b of res.body.balances)
      out.set(`${String(b.scope)}#${String((b.allocated as Json).unit)}`, b);
    cursor = res.body.next_cursor;
  } while (cursor);
  return out;
}

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
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A scope of the tenant from a path relative to its root ('' is the root). */
export const scopeOf = (t: GivenTenant, rel: string) => `tenant:${t.tenant}${rel ? `/${rel}` : ''}`;

/** Wire shapes, as SPEC writes them. */
export interface WireAmount {
  unit: string;
  amount: number;
}
export interface WireBalance {
  scope: string;
  scope_path: string;
  remaining: WireAmount;
  allocated: WireAmount;
  spent: WireAmount;
  reserved: WireAmount;
  debt: WireAmount;
  overdraft_limit: WireAmount;
  is_over_limit: boolean;
}
