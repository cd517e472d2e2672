import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../../functions/outbound/webhooks.js';
import { expectError } from '../helpers/errors.js';
import {
  adminHeaders,
  type GivenTenant,
  givenBudget,
  givenTenant,
  newTenantsOn,
  scopeOf,
  usd,
} from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { eventually, type Receiver, startReceiver } from '../helpers/receiver.js';
import { eventErrors, referenceErrors } from '../helpers/reference-schemas.js';
import { useTestStack } from '../helpers/scaffold.js';

// Issue 26: webhook subscriptions on the operator's and the tenants' planes, their invariants on
// every provisioning path, signed deliveries from a durable queue (the local worker), retries,
// auto-disable, replay, test probes, bulk actions and the security configuration — all through
// real sockets to receivers on loopback. Every event, subscription and delivery seen is held to
// the reference's schemas.
const stack = useTestStack({
  env: {
    EVENTS_ENABLED: 'true',
    STREAM_POLL_INTERVAL_MS: '50',
    WEBHOOK_CACHE_TTL_MS: '0',
    WEBHOOK_TIMEOUT_MS: '5000',
  },
});
const admin = (path: string) => `${stack.adminUrl}${path}`;
const EVENT_PERMISSIONS = [
  'webhooks:read',
  'webhooks:write',
  'events:read',
  'budgets:write',
  'balances:read',
  'reservations:create',
];

let ok: Receiver;
let failing: Receiver;
let hanging: Receiver;
beforeAll(async () => {
  ok = await startReceiver('/ok/secret-path');
  failing = await startReceiver('/failing');
  failing.answer = () => 500;
  hanging = await startReceiver('/hanging');
  hanging.answer = () => 'hang';
});
afterAll(async () => {
  for (const r of [ok, failing, hanging]) await r.close();
});

const asTenant = (t: GivenTenant) => ({ headers: t.headers });
const asAdmin = { headers: adminHeaders };

/** A URL of the receiver of this subscription alone (operator subscriptions see every tenant's). */
let paths = 0;
const own = (r: Receiver) => `${r.url}/sub-${++paths}`;
const at = (r: Receiver, url: string) =>
  r.received.filter((x) => r.url + x.path.slice(new URL(r.url).pathname.length) === url);

async function createTenantWebhook(t: GivenTenant, body: Json) {
  return request<Json>('POST', admin('/v1/webhooks'), { ...asTenant(t), body });
}

/** A subscription of the tenant's own, by its key: its id and the secret answered once. */
async function subscribe(t: GivenTenant, body: Json) {
  const res = await createTenantWebhook(t, body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const subscription = res.body.subscription as Json;
  expect(referenceErrors('WebhookCreateResponse', res.body)).toEqual([]);
  return { id: String(subscription.subscription_id), secret: String(res.body.signing_secret) };
}

const deliveries = async (id: string, query = '') =>
  (await request<Json>('GET', admin(`/v1/admin/webhooks/${id}/deliveries${query}`), asAdmin)).body
    .deliveries as Json[];

const eventsOf = async (query: string) =>
  (await request<Json>('GET', admin(`/v1/admin/events?${query}`), asAdmin)).body.events as Json[];

const received = (r: Receiver, tenant: string) =>
  r.received.filter((x) => x.event.tenant_id === tenant);

describe('webhook subscriptions on both planes', () => {
  it('lets a tenant key manage its own, shows the secret once, and hides them from other tenants', async () => {
    const [a, b] = await Promise.all([
      givenTenant(stack, EVENT_PERMISSIONS),
      givenTenant(stack, EVENT_PERMISSIONS),
    ]);

    const { id, secret } = await subscribe(a, { url: ok.url, event_types: ['budget.created'] });
    const read = await request<Json>('GET', admin(`/v1/webhooks/${id}`), asTenant(a));
    const listed = await request<Json>('GET', admin('/v1/webhooks'), asTenant(a));
    const asOperator = await request<Json>('GET', admin(`/v1/admin/webhooks/${id}`), asAdmin);
    const onBehalf = await request<Json>('GET', admin(`/v1/webhooks?tenant=${a.tenant}`), asAdmin);
    const unnamed = await request<Json>('GET', admin('/v1/webhooks'), asAdmin);
    const others = await Promise.all([
      request('GET', admin(`/v1/webhooks/${id}`), asTenant(b)),
      request('PATCH', admin(`/v1/webhooks/${id}`), { ...asTenant(b), body: { status: 'PAUSED' } }),
      request('DELETE', admin(`/v1/webhooks/${id}`), asTenant(b)),
      request('POST', admin(`/v1/webhooks/${id}/test`), asTenant(b)),
      request('GET', admin(`/v1/webhooks/${id}/deliveries`), asTenant(b)),
    ]);
    const bList = await request<Json>('GET', admin('/v1/webhooks'), asTenant(b));

    expect(secret).toMatch(/^whsec_/);
    expect(read.status).toBe(200);
    expect(JSON.stringify(read.body)).not.toContain(secret);
    expect(referenceErrors('WebhookSubscription', read.body)).toEqual([]);
    expect(read.body).toMatchObject({
      tenant_id: a.tenant,
      status: 'ACTIVE',
      consecutive_failures: 0,
    });
    expect((listed.body.subscriptions as Json[]).map((s) => s.subscription_id)).toEqual([id]);
    expect(asOperator.body).toEqual(read.body);
    expect((onBehalf.body.subscriptions as Json[]).map((s) => s.subscription_id)).toEqual([id]);
    expectError(unnamed, 400, 'INVALID_REQUEST');
    for (const res of others) expectError(res, 404, 'NOT_FOUND');
    expect(bList.body.subscriptions).toEqual([]);
  });

  it('lets the operator create one for a tenant, or its own (__system__), and answers 404 / 409 for the owner', async () => {
    const t = await givenTenant(stack);
    const body = { url: ok.url, event_types: ['budget.created'] };

    const forTenant = await request<Json>(
      'POST',
      admin(`/v1/admin/webhooks?tenant_id=${t.tenant}`),
      {
        ...asAdmin,
        body,
      },
    );
    const own = await request<Json>('POST', admin('/v1/admin/webhooks'), { ...asAdmin, body });
    const nobody = await request('POST', admin('/v1/admin/webhooks?tenant_id=no-such-tenant'), {
      ...asAdmin,
      body,
    });
    const listed = await request<Json>(
      'GET',
      admin(`/v1/admin/webhooks?tenant_id=${t.tenant}`),
      asAdmin,
    );

    expect(forTenant.status).toBe(201);
    expect((forTenant.body.subscription as Json).tenant_id).toBe(t.tenant);
    expect((own.body.subscription as Json).tenant_id).toBe('__system__');
    expectError(nobody, 404, 'NOT_FOUND');
    expect((listed.body.subscriptions as Json[]).length).toBe(1);
  });

  it('wants webhooks:write to change and webhooks:read to read', async () => {
    const t = await givenTenant(stack, ['balances:read']);

    expectError(
      await createTenantWebhook(t, { url: ok.url, event_types: ['budget.created'] }),
      403,
      'FORBIDDEN',
    );
    expectError(await request('GET', admin('/v1/webhooks'), asTenant(t)), 403, 'FORBIDDEN');
    expectError(await request('GET', admin('/v1/events'), asTenant(t)), 403, 'FORBIDDEN');
  });
});

describe('the subscription invariants on every provisioning path (400, nothing stored)', () => {
  it('refuses admin-only selectors on a tenant-owned subscription, from the tenant and from the operator', async () => {
    const t = await givenTenant(stack, EVENT_PERMISSIONS);
    const attempts = await Promise.all([
      createTenantWebhook(t, { url: ok.url, event_types: ['api_key.created'] }),
      createTenantWebhook(t, {
        url: ok.url,
        event_types: ['budget.created'],
        event_categories: ['system'],
      }),
      createTenantWebhook(t, { url: ok.url, event_types: [] }),
      request('POST', admin(`/v1/admin/webhooks?tenant_id=${t.tenant}`), {
        ...asAdmin,
        body: { url: ok.url, event_types: ['webhook.created'] },
      }),
      request('POST', admin(`/v1/admin/webhooks?tenant_id=${t.tenant}`), {
        ...asAdmin,
        body: { url: ok.url, event_types: ['budget.created'], event_categories: ['api_key'] },
      }),
    ]);
    const operatorOwn = await request('POST', admin('/v1/admin/webhooks'), {
      ...asAdmin,
      body: { url: ok.url, event_types: ['api_key.created'], event_categories: ['system'] },
    });

    for (const res of attempts) expectError(res, 400, 'INVALID_REQUEST');
    expect(operatorOwn.status).toBe(201);
    const listed = await request<Json>('GET', admin(`/v1/webhooks`), asTenant(t));
    expect(listed.body.subscriptions).toEqual([]);
  });

  it('refuses an update that would break them, under any key, and keeps the subscription as it was', async () => {
    const t = await givenTenant(stack, EVENT_PERMISSIONS);
    const { id } = await subscribe(t, { url: ok.url, event_types: ['budget.created'] });
    const patch = (path: string, headers: Record<string, string>, body: Json) =>
      request('PATCH', admin(path), { headers, body });

    const refused = await Promise.all([
      patch(`/v1/webhooks/${id}`, t.headers, { event_types: [] }),
      patch(`/v1/webhooks/${id}`, t.headers, { event_categories: ['webhook'] }),
      patch(`/v1/webhooks/${id}`, adminHeaders, { event_categories: ['policy'] }),
      patch(`/v1/admin/webhooks/${id}`, adminHeaders, { event_types: ['system.webhook_test'] }),
    ]);
    const categoryOnly = await patch(`/v1/webhooks/${id}`, t.headers, {
      event_types: [],
      event_categories: ['budget'],
    });

    for (const res of refused) expectError(res, 400, 'INVALID_REQUEST');
    expect(categoryOnly.status).toBe(200);
    expect(categoryOnly.body).toMatchObject({ event_types: [], event_categories: ['budget'] });
  });

  it('holds on the environment bootstrap: an operator subscription to every category, made once', async () => {
    const { bootstrapSubscriptions, bootstrapId } = await import(
      '../../functions/use-cases/webhooks.js'
    );
    const { webhookPorts } = await import('../../functions/outbound/sinks.js');
    const url = `${ok.url}/bootstrap`;

    await bootstrapSubscriptions(
      [url],
      'whsec_bootstrap-secret',
      { now: Date.now(), requestId: 'boot' },
      webhookPorts(),
    );
    await bootstrapSubscriptions(
      [url],
      'whsec_bootstrap-secret',
      { now: Date.now(), requestId: 'boot' },
      webhookPorts(),
    );
    const read = await request<Json>(
      'GET',
      admin(`/v1/admin/webhooks/${bootstrapId(url)}`),
      asAdmin,
    );
    const all = await request<Json>(
      'GET',
      admin('/v1/admin/webhooks?tenant_id=__system__&limit=100'),
      asAdmin,
    );

    expect(read.body).toMatchObject({
      tenant_id: '__system__',
      url,
      event_types: [],
      status: 'ACTIVE',
    });
    expect((read.body.event_categories as string[]).length).toBe(7);
    expect((all.body.subscriptions as Json[]).filter((s) => s.url === url)).toHaveLength(1);
    expect(referenceErrors('WebhookSubscription', read.body)).toEqual([]);
  });
});

describe('delivery', () => {
  it('POSTs each selected event, signed with the subscription’s secret, with its trace, and records the attempt', async () => {
    const t = await givenTenant(stack, EVENT_PERMISSIONS);
    const url = own(ok);
    const { id, secret } = await subscribe(t, {
      url,
      event_types: ['budget.created'],
      event_categories: ['tenant'],
    });
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00';

    const created = await request('POST', admin('/v1/admin/budgets'), {
      headers: { ...adminHeaders, traceparent },
      body: { scope: scopeOf(t, ''), unit: 'USD_MICROCENTS', allocated: usd(1_000) },
    });
    const [delivery] = await eventually(() => {
      const got = at(ok, url).filter((r) => r.event.event_type === 'budget.created');
      return got.length > 0 && got;
    }, 'budget.created delivered');
    const log = await eventually(async () => {
      const d = await deliveries(id);
      return d.length > 0 && d[0]?.status === 'SUCCESS' && d;
    }, 'the delivery recorded');

    expect(created.status).toBe(201);
    expect(created.headers.get('x-cycles-trace-id')).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(delivery).toBeDefined();
    if (!delivery) return;
    expect(
      verifySignature(secret, delivery.body, String(delivery.headers['x-cycles-signature'])),
    ).toBe(true);
    expect(delivery.headers).toMatchObject({
      'x-cycles-event-type': 'budget.created',
      'x-cycles-event-id': delivery.event.event_id,
      'x-cycles-trace-id': '0af7651916cd43dd8448eb211c80319c',
      'content-type': 'application/json',
    });
    // The inbound sampling flag (00) is kept on the outbound traceparent.
    expect(String(delivery.headers.traceparent)).toMatch(
      /^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-00$/,
    );
    expect(eventErrors(delivery.event)).toEqual([]);
    expect(delivery.event).toMatchObject({
      tenant_id: t.tenant,
      scope: scopeOf(t, ''),
      actor: { type: 'admin' },
      trace_id: '0af7651916cd43dd8448eb211c80319c',
      request_id: created.headers.get('x-request-id'),
    });
    expect(log[0]).toMatchObject({
      subscription_id: id,
      event_id: delivery.event.event_id,
      event_type: 'budget.created',
      status: 'SUCCESS',
      attempts: 1,
      response_status: 204,
      trace_id: '0af7651916cd43dd8448eb211c80319c',
    });
    for (const d of log) expect(referenceErrors('WebhookDelivery', d)).toEqual([]);
    // The stored event is the document delivered, byte for byte.
    const stored = await request(
      'GET',
      admin(`/v1/admin/events/${delivery.event.event_id}`),
      asAdmin,
    );
    expect(JSON.stringify(stored.body)).toBe(delivery.body);
  });

  it('retries per the policy, gives up, and disables the subscription after its run of failures (webhook.disabled)', async () => {
    const t = await givenTenant(stack, EVENT_PERMISSIONS);
    const { id } = await subscribe(t, {
      url: failing.url,
      event_types: ['budget.created'],
      retry_policy: { max_retries: 1, initial_delay_ms: 100 },
      disable_after_failures: 2,
    });

    await givenBudget(stack, t, '', 1_000);
    await givenBudget(stack, t, 'workspace:w', 100);
    const disabled = await eventually(async () => {
      const s = await request<Json>('GET', admin(`/v1/webhooks/${id}`), asTenant(t));
      return s.body.status === 'DISABLED' && s.body;
    }, 'the subscription disabled');
    const log = await deliveries(id);
    const [disabledEvent] = await eventually(
      () =>
        eventsOf(`tenant_id=${t.tenant}&event_type=webhook.disabled`).then(
          (e) => e.length > 0 && e,
        ),
      'webhook.disabled logged',
    );
    const tenantView = await request<Json>('GET', admin('/v1/events'), asTenant(t));
    const resumed = await request<Json>('PATCH', admin(`/v1/webhooks/${id}`), {
      ...asTenant(t),
      body: { status: 'ACTIVE' },
    });

    expect(disabled).toMatchObject({ consecutive_failures: 2 });
    expect(log.map((d) => [d.status, d.attempts, d.response_status])).toEqual([
      ['FAILED', 2, 500],
      ['FAILED', 2, 500],
    ]);
    expect(disabledEvent).toMatchObject({
      category: 'webhook',
      actor: { type: 'system' },
      data: { subscription_id: id, new_status: 'DISABLED', disable_reason: expect.any(String) },
    });
    expect(eventErrors(disabledEvent)).toEqual([]);
    // webhook.* is the operator's: the tenant's own listing leaves it out.
    expect((tenantView.body.events as Json[]).some((e) => e.category === 'webhook')).toBe(false);
    expect(resumed.body).toMatchObject({ status: 'ACTIVE', consecutive_failures: 0 });
  });

  it('never lets a receiver that answers 500 or hangs delay another subscription', async () => {
    const t = await givenTenant(stack, EVENT_PERMISSIONS);
    const selectors = { event_types: ['budget.created'] };
    const [slow, bad, good] = [own(hanging), own(failing), own(ok)];
    await subscribe(t, { url: slow, ...selectors });
    await subscribe(t, { url: bad, ...selectors, retry_policy: { initial_delay_ms: 100 } });
    await subscribe(t, { url: good, ...selectors });

    // The hanging receiver's lane fills first: two attempts held open (WEBHOOK_TIMEOUT_MS each).
    await givenBudget(stack, t, 'workspace:first', 100);
    await givenBudget(stack, t, 'workspace:second', 100);
    await eventually(() => hanging.hanging() >= 2, 'two attempts held by the hanging receiver');
    await eventually(() => at(failing, bad).length >= 2, 'two refused by the failing receiver');

    const started = Date.now();
    for (let i = 0; i < 6; i++) await givenBudget(stack, t, `workspace:w${i}`, 100);
    await eventually(() => at(ok, good).length >= 8, 'eight deliveries to the healthy receiver');
    const tookMs = Date.now() - started;

    // Meanwhile the hanging receiver still holds its first attempts and the failing one is
    // retried: the healthy one got every event within a poll or two of it.
    expect(hanging.hanging()).toBeGreaterThan(0);
    expect(at(hanging, slow).length).toBeLessThanOrEqual(4);
    expect(tookMs).toBeLessThan(4_000);
  });
});

describe('replay (all or narrow)', () => {
  it('refuses a window with more than max_events before queueing anything, then queues the whole window', async () => {
    const t = await givenTenant(stack, EVENT_PERMISSIONS);
    const url = own(ok);
    const { id } = await subscribe(t, { url, event_types: ['budget.created'] });
    const from = new Date().toISOString();
    for (const w of ['a', 'b', 'c']) await givenBudget(stack, t, `workspace:${w}`, 100);
    await eventually(() => at(ok, url).length >= 3, 'three deliveries');
    const before = (await deliveries(id)).length;

    const tooMany = await request('POST', admin(`/v1/admin/webhooks/${id}/replay`), {
      ...asAdmin,
      body: { from, max_events: 2 },
    });
    const afterRefusal = (await deliveries(id)).length;
    const replayed = await request<Json>('POST', admin(`/v1/admin/webhooks/${id}/replay`), {
      ...asAdmin,
      body: { from, max_events: 3 },
    });
    await eventually(() => at(ok, url).length >= 6, 'three replayed deliveries');

    expectError(tooMany, 400, 'INVALID_REQUEST');
    expect(afterRefusal).toBe(before);
    expect(replayed.status).toBe(202);
    expect(replayed.body).toMatchObject({ events_queued: 3 });
    const ids = at(ok, url).map((r) => String(r.event.event_id));
    // The same events again (same ids: a consumer deduplicates), each once more.
    expect(ids.slice(3).sort()).toEqual(ids.slice(0, 3).sort());
    expect((await deliveries(id)).length).toBe(before + 3);
  });

  it('lets a tenant replay its own subscription, its own events only, and not another tenant’s', async () => {
    const [t, other] = await Promise.all([
      givenTenant(stack, EVENT_PERMISSIONS),
      givenTenant(stack, EVENT_PERMISSIONS),
    ]);
    const url = own(ok);
    const { id } = await subscribe(t, { url, event_types: ['budget.created'] });
    const from = new Date().toISOString();
    await Promise.all([
      givenBudget(stack, t, 'workspace:a', 100),
      givenBudget(stack, other, 'workspace:a', 100),
    ]);
    await eventually(() => at(ok, url).length >= 1, 'the first delivery');

    const path = admin(`/v1/webhooks/${id}/replay`);
    const foreign = await request('POST', path, { ...asTenant(other), body: { from } });
    const replayed = await request<Json>('POST', path, { ...asTenant(t), body: { from } });
    await eventually(() => at(ok, url).length >= 2, 'the replayed delivery');

    expectError(foreign, 404, 'NOT_FOUND');
    expect(replayed.status).toBe(202);
    expect(replayed.body).toMatchObject({ events_queued: 1 });
    expect(at(ok, url).map((r) => r.event.tenant_id)).toEqual([t.tenant, t.tenant]);
  });
});

describe('the test probe', () => {
  it('sends system.webhook_test to the subscription, signed, counting nothing against it', async () => {
    const t = await givenTenant(stack, EVENT_PERMISSIONS);
    const good = await subscribe(t, { url: ok.url, event_types: ['budget.created'] });
    const bad = await subscribe(t, { url: failing.url, event_types: ['budget.created'] });

    const passed = await request<Json>('POST', admin(`/v1/webhooks/${good.id}/test`), asTenant(t));
    const failed = await request<Json>('POST', admin(`/v1/admin/webhooks/${bad.id}/test`), asAdmin);
    const badAfter = await request<Json>('GET', admin(`/v1/webhooks/${bad.id}`), asTenant(t));
    const probe = received(ok, t.tenant).find((r) => r.event.event_id === passed.body.event_id);

    expect(passed.body).toMatchObject({ success: true, response_status: 204 });
    expect(failed.body).toMatchObject({ success: false, response_status: 500 });
    expect(badAfter.body).toMatchObject({ status: 'ACTIVE', consecutive_failures: 0 });
    expect(probe?.event).toMatchObject({ event_type: 'system.webhook_test', category: 'system' });
    expect(eventErrors(probe?.event)).toEqual([]);
    expect(
      verifySignature(good.secret, probe?.body ?? '', String(probe?.headers['x-cycles-signature'])),
    ).toBe(true);
    expect((await deliveries(bad.id))[0]).toMatchObject({ status: 'FAILED', attempts: 1 });
  });
});

describe('the event log', () => {
  it('lists events with the reference filters and pages, and a tenant sees only its own, of its categories', async () => {
    const [a, b] = await Promise.all([
      givenTenant(stack, EVENT_PERMISSIONS),
      givenTenant(stack, EVENT_PERMISSIONS),
    ]);
    for (const w of ['x', 'y', 'z']) await givenBudget(stack, a, `workspace:${w}`, 100);
    const all = await eventually(
      () => eventsOf(`tenant_id=${a.tenant}&limit=100`).then((e) => e.length >= 5 && e),
      "tenant a's events",
    );

    const byType = await eventsOf(`tenant_id=${a.tenant}&event_type=budget.created`);
    const byScope = await eventsOf(
      `tenant_id=${a.tenant}&scope=${encodeURIComponent(scopeOf(a, 'workspace:y'))}`,
    );
    const searched = await eventsOf(
      `search=${encodeURIComponent(`WORKSPACE:Z`)}&tenant_id=${a.tenant}`,
    );
    const first = await request<Json>(
      'GET',
      admin(`/v1/admin/events?tenant_id=${a.tenant}&limit=2&sort_dir=asc`),
      asAdmin,
    );
    const second = await request<Json>(
      'GET',
      admin(
        `/v1/admin/events?tenant_id=${a.tenant}&limit=2&sort_dir=asc&cursor=${first.body.next_cursor}`,
      ),
      asAdmin,
    );
    const everyone = await eventually(
      () => eventsOf('limit=100').then((e) => e.some((x) => x.tenant_id === a.tenant) && e),
      'the all-tenants listing',
    );
    // More than 100 is served as 100, as the reference server does (its dashboard asks for 200).
    const mine = await request<Json>('GET', admin('/v1/events?limit=200'), asTenant(a));
    const webhooks = await request<Json>('GET', admin('/v1/admin/webhooks?limit=200'), asAdmin);
    const theirs = await request<Json>('GET', admin('/v1/events?limit=100'), asTenant(b));
    const missing = await request(
      'GET',
      admin('/v1/admin/events/evt_00000000000000000000000000000000'),
      asAdmin,
    );

    for (const e of all) expect(eventErrors(e), String(e.event_type)).toEqual([]);
    expect(all.map((e) => e.event_type)).toEqual(
      expect.arrayContaining(['tenant.created', 'api_key.created', 'budget.created']),
    );
    expect(byType).toHaveLength(3);
    expect(byScope.map((e) => e.scope)).toEqual([scopeOf(a, 'workspace:y')]);
    expect(searched.map((e) => e.scope)).toEqual([scopeOf(a, 'workspace:z')]);
    expect(first.body.has_more).toBe(true);
    expect((first.body.events as Json[])[0]?.event_type).toBe('tenant.created');
    const paged = [...(first.body.events as Json[]), ...(second.body.events as Json[])];
    expect(new Set(paged.map((e) => e.event_id)).size).toBe(4);
    expect(everyone.length).toBeGreaterThan(0);
    const mineEvents = mine.body.events as Json[];
    expect(mine.status).toBe(200);
    expect(webhooks.status).toBe(200);
    expect(mineEvents.every((e) => e.tenant_id === a.tenant)).toBe(true);
    expect(mineEvents.some((e) => e.category === 'api_key')).toBe(false);
    expect(mineEvents.map((e) => e.event_type)).toContain('budget.created');
    expect((theirs.body.events as Json[]).some((e) => e.tenant_id === a.tenant)).toBe(false);
    expectError(missing, 404, 'NOT_FOUND');
  });

  it('finds the events of one request by its trace id and its request id', async () => {
    const t = await givenTenant(stack);
    const traceId = 'ab'.repeat(16);

    const created = await request('POST', admin('/v1/admin/budgets'), {
      headers: { ...adminHeaders, 'x-cycles-trace-id': traceId },
      body: { scope: scopeOf(t, ''), unit: 'TOKENS', allocated: { unit: 'TOKENS', amount: 10 } },
    });
    const byTrace = await eventually(
      () => eventsOf(`trace_id=${traceId}`).then((e) => e.length > 0 && e),
      'the event of the trace',
    );
    const byRequest = await eventsOf(
      `request_id=${created.headers.get('x-request-id')}&tenant_id=${t.tenant}`,
    );

    expect(byTrace.map((e) => e.event_type)).toEqual(['budget.created']);
    expect(byRequest.map((e) => e.event_id)).toEqual(byTrace.map((e) => e.event_id));
  });
});

describe('tracing', () => {
  it('echoes the trace on every answer, errors included, and makes one up when none or a bad one came', async () => {
    const given = await request('GET', admin('/v1/admin/tenants/no-such-tenant'), {
      headers: {
        ...adminHeaders,
        traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      },
    });
    const malformed = await request('GET', admin('/v1/admin/tenants'), {
      headers: { ...adminHeaders, traceparent: 'nonsense', 'x-cycles-trace-id': 'XYZ' },
    });
    const runtime = await request('GET', `${stack.runtimeUrl}/v1/balances`, {});
    // The plain handlers (health, not found: http/serve.ts) answer with it too.
    const health = await request('GET', `${stack.runtimeUrl}/actuator/health`, {
      headers: { 'x-cycles-trace-id': '0af7651916cd43dd8448eb211c80319c' },
    });
    const notFound = await request('GET', admin('/v1/admin/no-such-route'), {});

    expect(given.status).toBe(404);
    expect(given.headers.get('x-cycles-trace-id')).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(given.headers.get('traceparent')).toMatch(
      /^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01$/,
    );
    expect(malformed.status).toBe(200);
    expect(malformed.headers.get('x-cycles-trace-id')).toMatch(/^[0-9a-f]{32}$/);
    expect(runtime.status).toBe(401);
    expect(runtime.headers.get('x-cycles-trace-id')).toMatch(/^[0-9a-f]{32}$/);
    expect(health.status).toBe(200);
    expect(health.headers.get('x-cycles-trace-id')).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get('traceparent')).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
  });
});

describe('the webhook security configuration', () => {
  it('refuses a bad range; blocks a target at creation and again at delivery, after resolving it', async () => {
    const t = await givenTenant(stack, EVENT_PERMISSIONS);
    const url = own(ok);
    const { id } = await subscribe(t, {
      url,
      event_types: ['budget.created'],
      retry_policy: { max_retries: 0 },
    });
    const original = await request<Json>(
      'GET',
      admin('/v1/admin/config/webhook-security'),
      asAdmin,
    );
    const put = (body: Json) =>
      request<Json>('PUT', admin('/v1/admin/config/webhook-security'), { ...asAdmin, body });

    const bad = await put({ blocked_cidr_ranges: ['127.0.0.0/40'] });
    const strict = await put({ blocked_cidr_ranges: ['127.0.0.0/8'], allow_http: true });
    let refused: Awaited<ReturnType<typeof createTenantWebhook>> | undefined;
    let blocked: Json | undefined;
    try {
      refused = await createTenantWebhook(t, {
        url: ok.url.replace('127.0.0.1', 'localhost'),
        event_types: ['budget.created'],
      });
      await givenBudget(stack, t, '', 100);
      [blocked] = await eventually(
        () => deliveries(id).then((d) => d[0]?.status === 'FAILED' && d),
        'the blocked delivery',
      );
    } finally {
      await put(original.body);
    }

    expectError(bad, 400, 'INVALID_REQUEST');
    expect(strict.body).toEqual({
      blocked_cidr_ranges: ['127.0.0.0/8'],
      allowed_url_patterns: [],
      allow_http: true,
    });
    if (refused) expectError(refused, 400, 'INVALID_REQUEST');
    expect(String(blocked?.error_message)).toContain('127.0.0.1');
    expect(at(ok, url)).toEqual([]);
  });
});

describe('bulk action', () => {
  it('pauses every match once, answers a repeated key the same, and refuses a count that moved', async () => {
    const t = await givenTenant(stack, EVENT_PERMISSIONS);
    const a = await subscribe(t, { url: ok.url, event_types: ['budget.created'] });
    const b = await subscribe(t, { url: ok.url, event_types: ['budget.exhausted'] });
    const bulk = (body: Json) =>
      request<Json>('POST', admin('/v1/admin/webhooks/bulk-action'), { ...asAdmin, body });
    const filter = { tenant_id: t.tenant };

    const paused = await bulk({
      filter,
      action: 'PAUSE',
      expected_count: 2,
      idempotency_key: `${t.tenant}-1`,
    });
    const again = await bulk({
      filter,
      action: 'PAUSE',
      expected_count: 2,
      idempotency_key: `${t.tenant}-1`,
    });
    const repeat = await bulk({ filter, action: 'PAUSE', idempotency_key: `${t.tenant}-2` });
    const moved = await bulk({
      filter,
      action: 'RESUME',
      expected_count: 5,
      idempotency_key: `${t.tenant}-3`,
    });
    const deleted = await bulk({ filter, action: 'DELETE', idempotency_key: `${t.tenant}-4` });
    const pausedEvents = await eventually(
      () =>
        eventsOf(`tenant_id=${t.tenant}&event_type=webhook.paused`).then((e) => e.length >= 2 && e),
      'one webhook.paused per row',
    );

    expect(paused.body).toMatchObject({
      action: 'PAUSE',
      total_matched: 2,
      failed: [],
      skipped: [],
    });
    expect((paused.body.succeeded as Json[]).map((r) => r.id).sort()).toEqual([a.id, b.id].sort());
    expect(referenceErrors('WebhookBulkActionResponse', paused.body)).toEqual([]);
    expect(again.body).toEqual(paused.body);
    expect(repeat.body.skipped).toEqual([
      { id: expect.any(String), reason: 'ALREADY_IN_TARGET_STATE' },
      { id: expect.any(String), reason: 'ALREADY_IN_TARGET_STATE' },
    ]);
    expectError(moved, 409, 'COUNT_MISMATCH');
    expect((deleted.body.succeeded as Json[]).length).toBe(2);
    expect(new Set(pausedEvents.map((e) => e.correlation_id))).toEqual(
      new Set([`webhook_bulk_action:pause:${paused.headers.get('x-request-id')}`]),
    );
  });
});

describe("a tenant's close", () => {
  it('disables its webhooks and revokes its keys, each a *_via_tenant_cascade event; its webhooks then refuse changes', async () => {
    const t = await givenTenant(stack, EVENT_PERMISSIONS);
    await givenBudget(stack, t, '', 100);
    const { id } = await subscribe(t, { url: own(ok), event_types: ['budget.created'] });
    newTenantsOn(stack); // its keys will be revoked: no ledger audit with them after the test

    const closed = await request('PATCH', admin(`/v1/admin/tenants/${t.tenant}`), {
      ...asAdmin,
      body: { status: 'CLOSED' },
    });
    const cascade = await eventually(
      () =>
        eventsOf(`tenant_id=${t.tenant}&limit=100`).then((e) => {
          const types = e.map((x) => x.event_type);
          return (
            types.includes('webhook.disabled_via_tenant_cascade') &&
            types.includes('budget.closed_via_tenant_cascade') &&
            types.includes('api_key.revoked_via_tenant_cascade') &&
            types.includes('tenant.closed') &&
            e
          );
        }),
      'the cascade events',
    );
    const changed = await request('PATCH', admin(`/v1/admin/webhooks/${id}`), {
      ...asAdmin,
      body: { status: 'ACTIVE' },
    });

    expect(closed.status).toBe(200);
    for (const e of cascade) expect(eventErrors(e), String(e.event_type)).toEqual([]);
    const disabled = cascade.find((e) => e.event_type === 'webhook.disabled_via_tenant_cascade');
    expect(disabled?.data).toMatchObject({
      subscription_id: id,
      new_status: 'DISABLED',
      cascade_reason: 'tenant_closed',
    });
    expectError(changed, 409, 'TENANT_CLOSED');
  });
});
