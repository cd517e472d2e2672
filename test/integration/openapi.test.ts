import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { derivedId } from '../../functions/domain/fingerprint.js';
import type { Server } from '../../functions/routes.js';
import { openApiFile } from '../../infra/openapi.js';
import {
  adminHeaders,
  givenBudget,
  givenTenant,
  reserveBody,
  scopeOf,
  usd,
} from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { checkedSuccesses } from '../helpers/openapi.js';
import { eventually, startReceiver } from '../helpers/receiver.js';
import { useTestStack } from '../helpers/scaffold.js';

/** A delegation's child id: derived from its tenant and idempotency key. */
const derivedChild = (tenant: string, key: string) => derivedId('rsv', tenant, 'delegation', key);

// Issue 15 § 4: each server serves its OpenAPI document, and every operation of both documents
// answers a success that validates against it (test/helpers/http.ts checks each answer).

// Events on: the event log's operations answer real events.
const stack = useTestStack({ env: { EVENTS_ENABLED: 'true', STREAM_POLL_INTERVAL_MS: '50' } });
const url = (server: Server, path: string) =>
  `${server === 'runtime' ? stack.runtimeUrl : stack.adminUrl}${path}`;

describe.each(['runtime', 'admin'] as const)('GET /openapi.json on the %s server', (server) => {
  it('answers 200 application/json with its OpenAPI 3.1 document, the generated file', async () => {
    const res = await fetch(url(server, '/openapi.json'));
    const text = await res.text();

    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const document = JSON.parse(text) as Json;
    expect(document.openapi).toMatch(/^3\.1\.\d+$/);
    expect(document).toEqual(JSON.parse(await readFile(openApiFile(server), 'utf8')));
  });

  it("lists only that server's operations", async () => {
    const res = await request('GET', url(server, '/openapi.json'));

    const paths = Object.keys(res.body.paths as Json);
    expect(paths).toContain('/openapi.json');
    expect(paths).toContain('/actuator/health');
    expect(paths.some((p) => p.startsWith('/v1/admin/'))).toBe(server === 'admin');
    // The admin server answers the reservation routes the console calls (listing, release, our
    // charges and refunds), nothing else of the runtime plane (docs/decisions.md § Console).
    const reservations = paths.filter((p) => p.startsWith('/v1/reservations'));
    if (server === 'admin') {
      expect(reservations.sort()).toEqual([
        '/v1/reservations',
        '/v1/reservations/{reservation_id}/charges',
        '/v1/reservations/{reservation_id}/delegations',
        '/v1/reservations/{reservation_id}/refunds',
        '/v1/reservations/{reservation_id}/release',
      ]);
    } else {
      expect(reservations.length).toBeGreaterThan(2);
    }
    expect(paths).not.toContain('/console');
  });
});

/** The governance operations: a policy's, the overview, the bulk actions. */
async function policyTour(t: { tenant: string }) {
  const ad = (path: string) => url('admin', path);
  const created = await request('POST', ad('/v1/admin/policies'), {
    headers: adminHeaders,
    body: {
      tenant_id: t.tenant,
      name: 'tour',
      scope_pattern: `tenant:${t.tenant}/*`,
      caps: { max_tokens: 10 },
      reservation_ttl_override: { max_ttl_ms: 60_000 },
    },
  });
  const id = String(created.body.policy_id);
  return [
    created,
    await request('GET', ad('/v1/admin/overview'), { headers: adminHeaders }),
    await request('POST', ad('/v1/admin/tenants/bulk-action'), {
      headers: adminHeaders,
      body: { filter: { search: 'no-tenant-has-this' }, action: 'SUSPEND', idempotency_key: 'b1' },
    }),
    await request('POST', ad('/v1/admin/budgets/bulk-action'), {
      headers: adminHeaders,
      body: {
        filter: { tenant_id: t.tenant, scope_prefix: `tenant:${t.tenant}/workspace:` },
        action: 'CREDIT',
        amount: { unit: 'USD_MICROCENTS', amount: 1 },
        idempotency_key: 'b2',
      },
    }),
    await request('GET', ad(`/v1/admin/policies?tenant_id=${t.tenant}`), { headers: adminHeaders }),
    await request('GET', ad(`/v1/admin/policies/${id}`), { headers: adminHeaders }),
    await request('PATCH', ad(`/v1/admin/policies/${id}`), {
      headers: adminHeaders,
      body: { status: 'DISABLED' },
    }),
  ];
}

describe('every operation of both documents', () => {
  it('answers a success whose body validates against its document', async () => {
    const t = await givenTenant(stack);
    const rt = (path: string) => url('runtime', path);
    const ad = (path: string) => url('admin', path);
    const as = (headers: Record<string, string>) => ({ headers });
    const caps = { max_tokens: 100, tool_denylist: ['shell'] };
    await givenBudget(stack, t, '', 1_000_000);
    await givenBudget(stack, t, 'workspace:w', 100_000, { caps });
    const budget = await request('POST', ad('/v1/admin/budgets'), {
      ...as(t.headers),
      body: {
        scope: scopeOf(t, 'app:a'),
        unit: 'TOKENS',
        allocated: { unit: 'TOKENS', amount: 500 },
        period: 'MONTHLY',
        period_anchor_day: 1,
      },
    });
    expect(budget.status, JSON.stringify(budget.body)).toBe(201);
    const byQuery = `?scope=${encodeURIComponent(scopeOf(t, 'app:a'))}&unit=TOKENS`;

    // The runtime plane: live and dry-run reserves (ALLOW, ALLOW_WITH_CAPS, DENY), decide,
    // settle each way, an event, the reads.
    const live = await request('POST', rt('/v1/reservations'), {
      ...as(t.headers),
      body: reserveBody({ subject: { tenant: t.tenant } }),
    });
    const capped = await request('POST', rt('/v1/reservations'), {
      ...as(t.headers),
      body: reserveBody({ metadata: { run: 1 } }),
    });
    const id = String(live.body.reservation_id);
    const other = String(capped.body.reservation_id);
    // Force-released on the admin server, as the console does.
    const third = await request('POST', rt('/v1/reservations'), {
      ...as(t.headers),
      body: reserveBody(),
    });
    const usage = await request('POST', rt('/v1/events'), {
      ...as(t.headers),
      body: {
        idempotency_key: randomUUID(),
        subject: { workspace: 'w' },
        action: { kind: 'tool.call', name: 'search' },
        actual: usd(5),
      },
    });
    const eventId = String(usage.body.event_id);
    const refund = (amount: number, reason: string) => ({
      idempotency_key: randomUUID(),
      amount: usd(amount),
      reason,
    });
    const answers = [
      live,
      capped,
      third,
      await request('POST', rt('/v1/reservations'), {
        ...as(t.headers),
        body: reserveBody({ dry_run: true, subject: { tenant: t.tenant } }),
      }),
      await request('POST', rt('/v1/reservations'), {
        ...as(t.headers),
        body: reserveBody({ dry_run: true, estimate: usd(10_000_000) }),
      }),
      await request('POST', rt('/v1/decide'), { ...as(t.headers), body: reserveBody() }),
      await request('POST', rt('/v1/decide'), {
        ...as(t.headers),
        body: reserveBody({ subject: { tenant: t.tenant } }),
      }),
      await request('POST', rt('/v1/decide'), {
        ...as(t.headers),
        body: reserveBody({ estimate: usd(10_000_000) }),
      }),
      await request('GET', rt(`/v1/reservations/${other}`), as(t.headers)),
      await request('POST', rt(`/v1/reservations/${id}/extend`), {
        ...as(t.headers),
        body: { idempotency_key: randomUUID(), extend_by_ms: 1_000 },
      }),
      // Ours: a charge while the hold is open, the charges listed, refunds after the commit.
      await request('POST', rt(`/v1/reservations/${id}/charges`), {
        ...as(t.headers),
        body: {
          idempotency_key: randomUUID(),
          amount: usd(20),
          metrics: { tokens_output: 12 },
          metadata: { part: 1 },
        },
      }),
      await request('GET', rt(`/v1/reservations/${id}/charges`), as(t.headers)),
      // Ours: a delegation (a child carved from the hold), released back, then listed.
      await request('POST', rt(`/v1/reservations/${id}/delegations`), {
        ...as(t.headers),
        body: { idempotency_key: `tour-child-${id}`, amount: usd(10), ttl_ms: 5_000 },
      }),
      await request(
        'POST',
        rt(`/v1/reservations/${derivedChild(t.tenant, `tour-child-${id}`)}/release`),
        { ...as(t.headers), body: { idempotency_key: randomUUID() } },
      ),
      await request('GET', rt(`/v1/reservations/${id}/delegations`), as(t.headers)),
      await request('POST', rt(`/v1/reservations/${id}/commit`), {
        ...as(t.headers),
        body: { idempotency_key: randomUUID(), actual: usd(60) },
      }),
      await request('POST', rt(`/v1/reservations/${id}/refunds`), {
        ...as(t.headers),
        body: refund(5, 'tour'),
      }),
      await request('POST', rt(`/v1/reservations/${other}/release`), {
        ...as(adminHeaders),
        body: { idempotency_key: randomUUID(), reason: 'tour' },
      }),
      await request('GET', rt(`/v1/reservations/${id}`), as(t.headers)),
      usage,
      await request('POST', rt(`/v1/events/${eventId}/refunds`), {
        ...as(t.headers),
        body: refund(1, 'tour'),
      }),
      await request('GET', rt('/v1/reservations?limit=1'), as(t.headers)),
      await request(
        'GET',
        rt(`/v1/balances?tenant=${t.tenant}&include_children=true`),
        as(t.headers),
      ),
      await request('GET', rt('/v1/auth/introspect'), as(t.headers)),
      await request('GET', rt('/actuator/health')),
      await request('GET', rt('/openapi.json')),
    ];

    // The admin plane: budgets (a rolling one), tenants, keys, the audit trail.
    const owner = `t-${randomUUID().slice(0, 12)}`;
    const key = await request('POST', ad('/v1/admin/api-keys'), {
      ...as(adminHeaders),
      body: { tenant_id: t.tenant, name: 'spare', expires_at: '2099-01-01T00:00:00Z' },
    });
    const keyId = String(key.body.key_id);
    answers.push(
      budget,
      key,
      await request('POST', ad('/v1/admin/tenants'), {
        ...as(adminHeaders),
        body: { tenant_id: owner, name: 'Owner' },
      }),
      await request(
        'POST',
        ad(
          `/v1/admin/budgets/${encodeURIComponent(scopeOf(t, 'workspace:w'))}/USD_MICROCENTS/fund`,
        ),
        { ...as(t.headers), body: { operation: 'CREDIT', amount: usd(1), idempotency_key: 'f1' } },
      ),
      await request('POST', ad(`/v1/admin/budgets/fund${byQuery}`), {
        ...as(t.headers),
        body: { operation: 'CREDIT', amount: { unit: 'TOKENS', amount: 1 }, idempotency_key: 'f2' },
      }),
      await request('GET', ad(`/v1/admin/budgets?tenant_id=${t.tenant}`), as(adminHeaders)),
      await request('GET', ad(`/v1/admin/budgets/lookup${byQuery}`), as(t.headers)),
      await request('GET', ad(`/v1/admin/budgets/periods${byQuery}`), as(t.headers)),
      await request(
        'GET',
        ad(
          `/v1/admin/budgets/accuracy?scope=${encodeURIComponent(scopeOf(t, 'workspace:w'))}&unit=USD_MICROCENTS`,
        ),
        as(t.headers),
      ),
      await request('PATCH', ad(`/v1/admin/budgets${byQuery}`), {
        ...as(t.headers),
        body: { overdraft_limit: { unit: 'TOKENS', amount: 10 } },
      }),
      await request('POST', ad(`/v1/admin/budgets/freeze${byQuery}`), as(t.headers)),
      await request('POST', ad(`/v1/admin/budgets/unfreeze${byQuery}`), as(t.headers)),
      await request('GET', ad('/v1/admin/tenants?limit=2'), as(adminHeaders)),
      await request('GET', ad(`/v1/admin/tenants/${t.tenant}`), as(adminHeaders)),
      await request('PATCH', ad(`/v1/admin/tenants/${owner}`), {
        ...as(adminHeaders),
        body: { status: 'SUSPENDED' },
      }),
      await request('GET', ad(`/v1/admin/api-keys?tenant_id=${t.tenant}`), as(adminHeaders)),
      await request('GET', ad(`/v1/admin/api-keys/${keyId}`), as(adminHeaders)),
      await request('PATCH', ad(`/v1/admin/api-keys/${keyId}`), {
        ...as(adminHeaders),
        body: { description: 'for the tour' },
      }),
      await request('DELETE', ad(`/v1/admin/api-keys/${keyId}?reason=done`), as(adminHeaders)),
      await request('GET', ad(`/v1/admin/audit/logs?tenant_id=${t.tenant}`), as(adminHeaders)),
      await request('POST', ad('/v1/auth/validate'), {
        ...as(adminHeaders),
        body: { key_secret: t.key },
      }),
      await request('POST', ad('/v1/auth/validate'), {
        ...as(adminHeaders),
        body: { key_secret: String(key.body.key_secret) },
      }),
      await request('GET', ad(`/v1/reservations?tenant=${t.tenant}`), as(adminHeaders)),
      await request('POST', ad(`/v1/reservations/${String(third.body.reservation_id)}/release`), {
        ...as(adminHeaders),
        body: { idempotency_key: randomUUID(), reason: 'console' },
      }),
      await request('GET', ad(`/v1/reservations/${id}/charges`), as(adminHeaders)),
      await request('GET', ad(`/v1/reservations/${id}/delegations`), as(adminHeaders)),
      await request('POST', ad(`/v1/reservations/${id}/refunds`), {
        ...as(adminHeaders),
        body: refund(5, 'console'),
      }),
      await request('POST', ad(`/v1/events/${eventId}/refunds`), {
        ...as(adminHeaders),
        body: refund(1, 'console'),
      }),
      await request('GET', ad('/v1/auth/introspect'), as(adminHeaders)),
      await request('GET', ad('/v1/auth/introspect'), as(t.headers)),
      ...(await policyTour(t)),
      await request('GET', ad('/actuator/health')),
      await request('GET', ad('/openapi.json')),
    );

    // Events and webhooks: both planes' subscriptions (a receiver on loopback), the log.
    const receiver = await startReceiver();
    const hooks = await request('POST', ad('/v1/admin/api-keys'), {
      ...as(adminHeaders),
      body: {
        tenant_id: t.tenant,
        name: 'hooks',
        permissions: ['webhooks:read', 'webhooks:write', 'events:read'],
      },
    });
    const tenantKey = as({ 'x-service-api-key': String(hooks.body.key_secret) });
    const selectors = { url: receiver.url, event_types: ['budget.created'] };
    const byAdmin = await request<Json>('POST', ad(`/v1/admin/webhooks?tenant_id=${t.tenant}`), {
      ...as(adminHeaders),
      body: selectors,
    });
    const byTenant = await request<Json>('POST', ad('/v1/webhooks'), {
      ...tenantKey,
      body: selectors,
    });
    const adminSub = `/v1/admin/webhooks/${(byAdmin.body.subscription as Json).subscription_id}`;
    const tenantSub = `/v1/webhooks/${(byTenant.body.subscription as Json).subscription_id}`;
    const logged = await eventually(async () => {
      const page = await request<Json>(
        'GET',
        ad(`/v1/admin/events?tenant_id=${t.tenant}`),
        as(adminHeaders),
      );
      return (page.body.events as Json[]).length > 0 && page;
    }, 'an event in the log');
    const loggedEventId = String(((logged.body.events as Json[])[0] as Json).event_id);
    const security = await request<Json>(
      'GET',
      ad('/v1/admin/config/webhook-security'),
      as(adminHeaders),
    );
    answers.push(
      byAdmin,
      byTenant,
      logged,
      security,
      await request('GET', ad(`/v1/admin/events/${loggedEventId}`), as(adminHeaders)),
      await request('GET', ad('/v1/events'), tenantKey),
      await request('GET', ad(`/v1/admin/webhooks?tenant_id=${t.tenant}`), as(adminHeaders)),
      await request('GET', ad('/v1/webhooks'), tenantKey),
      await request('GET', ad(adminSub), as(adminHeaders)),
      await request('GET', ad(tenantSub), tenantKey),
      await request('PATCH', ad(adminSub), { ...as(adminHeaders), body: { name: 'tour' } }),
      await request('PATCH', ad(tenantSub), { ...tenantKey, body: { name: 'tour' } }),
      await request('POST', ad(`${adminSub}/test`), as(adminHeaders)),
      await request('POST', ad(`${tenantSub}/test`), tenantKey),
      await request('GET', ad(`${adminSub}/deliveries`), as(adminHeaders)),
      await request('GET', ad(`${tenantSub}/deliveries`), tenantKey),
      await request('POST', ad(`${adminSub}/replay`), { ...as(adminHeaders), body: {} }),
      await request('POST', ad(`${tenantSub}/replay`), { ...tenantKey, body: {} }),
      await request('POST', ad('/v1/admin/webhooks/bulk-action'), {
        ...as(adminHeaders),
        body: { filter: { tenant_id: t.tenant }, action: 'PAUSE', idempotency_key: randomUUID() },
      }),
      await request('PUT', ad('/v1/admin/config/webhook-security'), {
        ...as(adminHeaders),
        body: security.body,
      }),
      await request('DELETE', ad(adminSub), as(adminHeaders)),
      await request('DELETE', ad(tenantSub), tenantKey),
    );
    await receiver.close();

    for (const res of answers) expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
    expect(capped.body).toMatchObject({ decision: 'ALLOW_WITH_CAPS' });
    const operations = await Promise.all(
      (['runtime', 'admin'] as const).map(async (server) => {
        const document = JSON.parse(await readFile(openApiFile(server), 'utf8')) as Json;
        return Object.entries(document.paths as Record<string, Json>).flatMap(([path, item]) =>
          Object.keys(item).map((method) => `${server} ${method.toUpperCase()} ${path}`),
        );
      }),
    );
    expect([...checkedSuccesses].sort()).toEqual(operations.flat().sort());
  });
});
