import type { HttpTarget } from './http.js';

export const UNIT = 'USD_MICROCENTS' as const;
/** Large enough that no run exhausts a budget: a refusal would be a bench bug, not a figure. */
export const ALLOCATED = 1_000_000_000_000_000;
/** Reservations live an hour, so nothing expires while the bench runs. */
export const TTL_MS = 3_600_000;

export interface BenchTenant {
  readonly label: string;
  readonly tenant: string;
  readonly headers: Record<string, string>;
  /** Scope → allocated, for every budget the bench created. */
  readonly budgets: Map<string, number>;
  /** Idempotency keys of every event sent (their ids derive from them). */
  readonly eventKeys: Set<string>;
  /** Events the service acknowledged (for the audit when the table cannot be read). */
  readonly events: Map<string, { readonly scopes: readonly string[]; readonly actual: number }>;
}

/**
 * A tenant, an API key with every permission and budgets at the given relative scopes
 * ('' is the tenant itself), all through the admin API as an operator would create them.
 */
export async function provisionTenant(
  admin: HttpTarget,
  adminKey: string,
  tenant: string,
  label: string,
  scopes: readonly string[],
): Promise<BenchTenant> {
  const adminHeaders = { 'x-admin-api-key': adminKey };
  await admin.expect('create tenant', 'POST', '/v1/admin/tenants', adminHeaders, {
    tenant_id: tenant,
    name: `bench ${label}`,
  });
  const key = await admin.expect('create api key', 'POST', '/v1/admin/api-keys', adminHeaders, {
    tenant_id: tenant,
    name: `bench ${label}`,
  });
  const headers = { 'x-service-api-key': String(key.key_secret) };
  const t: BenchTenant = {
    label,
    tenant,
    headers,
    budgets: new Map(),
    eventKeys: new Set(),
    events: new Map(),
  };
  const full = scopes.map((s) => (s ? `tenant:${tenant}/${s}` : `tenant:${tenant}`));
  // Some at a time: agent budgets for 50 clients are 50 admin calls.
  for (let i = 0; i < full.length; i += 16) {
    await Promise.all(
      full.slice(i, i + 16).map(async (scope) => {
        await admin.expect('create budget', 'POST', '/v1/admin/budgets', headers, {
          scope,
          unit: UNIT,
          allocated: { unit: UNIT, amount: ALLOCATED },
        });
        t.budgets.set(scope, ALLOCATED);
      }),
    );
  }
  return t;
}
