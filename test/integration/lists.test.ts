import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import {
  adminHeaders,
  type GivenTenant,
  givenBudget,
  givenTenant,
  givenTenantWith,
  reserveBody,
  scopeOf,
  usd,
} from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { useTestStack } from '../helpers/scaffold.js';

// The reference's list semantics (issue 27 point 5): sort_by / sort_dir with cursors bound to
// the sort and the filters, the reservation listing's time windows, limits clamped, and the
// admin key's listing of every tenant's budgets.
const clock = testClock();
const stack = useTestStack({ clock });
const admin = (path: string) =>
  request('GET', `${stack.adminUrl}${path}`, { headers: adminHeaders });
const listed = (t: GivenTenant, query: string) =>
  request('GET', `${stack.runtimeUrl}/v1/reservations?${query}`, { headers: t.headers });
const ids = (res: { body: Json }, key = 'reservations', id = 'reservation_id') =>
  (res.body[key] as Json[]).map((r) => r[id]);

/** Every page of a listing, by its cursor. */
async function walk(first: string, key: string, get: (q: string) => Promise<{ body: Json }>) {
  const all: Json[] = [];
  let query = first;
  for (;;) {
    const page = await get(query);
    all.push(...(page.body[key] as Json[]));
    if (!page.body.next_cursor) return all;
    query = `${first}&cursor=${encodeURIComponent(String(page.body.next_cursor))}`;
  }
}

describe('GET /v1/reservations', () => {
  it('sorts by any of the reference’s keys, each way, across pages', async () => {
    const t = await givenTenantWith(stack, { '': 1_000_000, 'workspace:w': 1_000_000 });
    for (const amount of [30, 75, 50, 10, 90]) {
      await request('POST', `${stack.runtimeUrl}/v1/reservations`, {
        headers: t.headers,
        body: reserveBody({ estimate: usd(amount) }),
      });
    }
    const reserved = async (query: string) =>
      (await walk(query, 'reservations', (q) => listed(t, q))).map(
        (r) => (r.reserved as Json).amount,
      );

    expect(await reserved('sort_by=reserved&sort_dir=asc&limit=2')).toEqual([10, 30, 50, 75, 90]);
    expect(await reserved('sort_by=reserved&limit=2')).toEqual([90, 75, 50, 30, 10]);
    expect(await reserved('sort_by=created_at_ms&sort_dir=asc&limit=3')).toEqual([
      30, 75, 50, 10, 90,
    ]);
  });

  it('refuses a cursor under another sort or other filters', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    for (let i = 0; i < 3; i++) {
      await request('POST', `${stack.runtimeUrl}/v1/reservations`, {
        headers: t.headers,
        body: reserveBody({ estimate: usd(i + 1) }),
      });
    }
    const first = await listed(t, 'sort_by=reserved&limit=1');
    const cursor = encodeURIComponent(String(first.body.next_cursor));

    const otherSort = await listed(t, `sort_by=expires_at_ms&limit=1&cursor=${cursor}`);
    const otherDir = await listed(t, `sort_by=reserved&sort_dir=asc&limit=1&cursor=${cursor}`);
    const otherWindow = await listed(
      t,
      `sort_by=reserved&from=2020-01-01T00:00:00Z&limit=1&cursor=${cursor}`,
    );

    for (const res of [otherSort, otherDir, otherWindow]) expectError(res, 400, 'INVALID_REQUEST');
  });

  it('filters by the creation, expiry and finalization windows, blank bounds ignored', async () => {
    const t = await givenTenantWith(stack, { '': 1_000_000, 'workspace:w': 1_000_000 });
    const reserve = (ttl: number) =>
      request('POST', `${stack.runtimeUrl}/v1/reservations`, {
        headers: t.headers,
        body: reserveBody({ ttl_ms: ttl }),
      });
    const early = await reserve(60_000);
    clock.advance(120_000);
    const mid = clock.now();
    const late = await reserve(600_000);
    await request(
      'POST',
      `${stack.runtimeUrl}/v1/reservations/${late.body.reservation_id}/commit`,
      {
        headers: t.headers,
        body: { idempotency_key: randomUUID(), actual: usd(1) },
      },
    );
    const iso = (ms: number) => new Date(ms).toISOString();

    const created = await listed(t, `from=${iso(mid)}`);
    const before = await listed(t, `to=${iso(mid)}&expires_from=`);
    const expiring = await listed(t, `expires_to=${iso(mid + 60_000)}`);
    const finalized = await listed(t, `finalized_from=${iso(mid)}`);
    const backwards = await listed(t, `from=${iso(mid)}&to=${iso(mid - 1)}`);

    expect(ids(created)).toEqual([late.body.reservation_id]);
    expect(ids(before)).toEqual([early.body.reservation_id]);
    expect(ids(expiring)).toEqual([early.body.reservation_id]);
    expect(ids(finalized)).toEqual([late.body.reservation_id]);
    expectError(backwards, 400, 'INVALID_REQUEST', 'runtime');
  });
});

describe('the admin listings', () => {
  it('clamp a limit above 100 to 100, as the reference does', async () => {
    const tenants = await admin('/v1/admin/tenants?limit=1000');
    const keys = await admin('/v1/admin/api-keys?limit=2000');

    expect(tenants.status).toBe(200);
    expect(keys.status).toBe(200);
    expect((tenants.body.tenants as Json[]).length).toBeLessThanOrEqual(100);
  });

  it('sort and search tenants', async () => {
    const tag = `s${randomUUID().slice(0, 6)}`;
    for (const name of ['Charlie', 'alpha', 'Bravo']) {
      await request('POST', `${stack.adminUrl}/v1/admin/tenants`, {
        headers: adminHeaders,
        body: { tenant_id: `${tag}-${name.toLowerCase()}`, name: `${name} ${tag}` },
      });
    }

    const byName = await walk(
      `/v1/admin/tenants?search=${tag}&sort_by=name&sort_dir=asc&limit=1`,
      'tenants',
      admin,
    );
    const newest = await admin(`/v1/admin/tenants?search=${tag.toUpperCase()}&sort_by=created_at`);

    expect(byName.map((t) => t.name)).toEqual([`Bravo ${tag}`, `Charlie ${tag}`, `alpha ${tag}`]);
    expect(ids(newest, 'tenants', 'tenant_id')).toEqual([
      `${tag}-bravo`,
      `${tag}-alpha`,
      `${tag}-charlie`,
    ]);
  });

  it('sort and search keys, and sort the audit trail', async () => {
    const t = await givenTenant(stack);
    for (const name of ['zeta', 'eta', 'theta']) {
      await request('POST', `${stack.adminUrl}/v1/admin/api-keys`, {
        headers: adminHeaders,
        body: { tenant_id: t.tenant, name },
      });
    }

    const keys = await admin(
      `/v1/admin/api-keys?tenant_id=${t.tenant}&search=eta&sort_by=name&sort_dir=asc`,
    );
    const trail = await admin(
      `/v1/admin/audit/logs?tenant_id=${t.tenant}&sort_by=operation&sort_dir=asc`,
    );
    const oldest = await admin(
      `/v1/admin/audit/logs?tenant_id=${t.tenant}&sort_by=timestamp&sort_dir=asc&limit=1`,
    );

    expect((keys.body.keys as Json[]).map((k) => k.name)).toEqual(['eta', 'theta', 'zeta']);
    const operations = (trail.body.logs as Json[]).map((l) => l.operation);
    expect(operations).toEqual([...operations].sort());
    expect((oldest.body.logs as Json[])[0]?.operation).toBe('createTenant');
  });
});

describe('GET /v1/admin/budgets with the admin key', () => {
  it('lists every tenant’s budgets without tenant_id, page by page', async () => {
    const a = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 500 });
    const b = await givenTenantWith(stack, { '': 2_000 });

    const all = await walk('/v1/admin/budgets?limit=1', 'ledgers', admin);

    const scopes = all.map((l) => l.scope);
    for (const scope of [scopeOf(a, ''), scopeOf(a, 'workspace:w'), scopeOf(b, '')]) {
      expect(scopes).toContain(scope);
    }
    expect(new Set(scopes).size).toBe(scopes.length);
  });

  it('finds budgets in debt or over their limit across tenants, and filters by utilization', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 100, { overdraftLimit: 100 });
    await givenBudget(stack, t, 'workspace:w', 1_000, { overdraftLimit: 1_000 });
    const hold = await request('POST', `${stack.runtimeUrl}/v1/reservations`, {
      headers: t.headers,
      body: reserveBody({ estimate: usd(100), overage_policy: 'ALLOW_WITH_OVERDRAFT' }),
    });
    await request(
      'POST',
      `${stack.runtimeUrl}/v1/reservations/${hold.body.reservation_id}/commit`,
      {
        headers: t.headers,
        body: { idempotency_key: randomUUID(), actual: usd(180) },
      },
    );
    // A limit lowered below the debt: over it (SPEC rule 4).
    await request(
      'PATCH',
      `${stack.adminUrl}/v1/admin/budgets?scope=${encodeURIComponent(scopeOf(t, ''))}&unit=USD_MICROCENTS`,
      { headers: adminHeaders, body: { overdraft_limit: usd(50) } },
    );

    const inDebt = await admin('/v1/admin/budgets?has_debt=true&limit=100');
    const overLimit = await admin('/v1/admin/budgets?over_limit=true&limit=100');
    const busy = await admin(`/v1/admin/budgets?tenant_id=${t.tenant}&utilization_min=0.9`);
    const byDebt = await admin(`/v1/admin/budgets?tenant_id=${t.tenant}&sort_by=debt`);

    const debtScopes = (inDebt.body.ledgers as Json[]).map((l) => l.scope);
    expect(debtScopes).toContain(scopeOf(t, ''));
    expect((overLimit.body.ledgers as Json[]).map((l) => l.scope)).toContain(scopeOf(t, ''));
    expect((busy.body.ledgers as Json[]).map((l) => l.scope)).toEqual([scopeOf(t, '')]);
    expect((byDebt.body.ledgers as Json[]).map((l) => (l.debt as Json).amount)).toEqual([80, 0]);
  });
});
