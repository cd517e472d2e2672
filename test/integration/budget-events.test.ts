import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUDGET_EVENT_TYPES, type BudgetEventType } from '../../functions/domain/budget-events.js';
import { BudgetEventMessage } from '../../functions/outbound/schemas.js';
import { verifySignature } from '../../functions/outbound/webhooks.js';
import { eventSchemasDir } from '../../infra/generate-event-schemas.js';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import {
  adminHeaders,
  givenBudget,
  givenTenant,
  givenTenantWith,
  scopeOf,
  sleep,
  usd,
} from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { eventErrors } from '../helpers/reference-schemas.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// Issue 15, point 3, and issue 26: budget events from the table's stream, POSTed to the webhooks
// of the environment bootstrap (WEBHOOK_URLS: an operator subscription to every event per URL;
// the local runner reads DynamoDB Local's stream as Lambda's event source mapping would). Two
// receivers on real sockets: one that answers (and can be told to fail), one that never answers.
// Every body received is also held to the reference's Event and EventData* schemas.
const SECRET = 'test-webhook-secret';

interface Delivery {
  readonly event: BudgetEventMessage;
  readonly attempt: number;
  readonly signed: boolean;
}

/** Bodies that did not match the zod schema or the published JSON Schema (there must be none). */
const invalid: string[] = [];

/** docs/events/budget-event.schema.json, as a consumer would validate with it. */
const ajv = new Ajv2020({ allErrors: true });
addFormatsModule.default(ajv);
const publishedSchema = ajv.compile(
  JSON.parse(readFileSync(join(eventSchemasDir, 'budget-event.schema.json'), 'utf8')),
);

/** Deliveries as received, and the status to answer each (default 204). */
const received: Delivery[] = [];
let answer: (event: BudgetEventMessage, attempt: number) => number = () => 204;
let hanging = 0;

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });

/** The budget-state events, and a refund's (derived from its audit record). */
const isBudgetEvent = (type: unknown) =>
  type === 'custom.refund' || BUDGET_EVENT_TYPES.includes(type as BudgetEventType);

const receiver = createServer(async (req: IncomingMessage, res: ServerResponse) => {
  const body = await readBody(req);
  const header = req.headers['x-cycles-signature'];
  const json = JSON.parse(body) as Json;
  if (eventErrors(json).length > 0) invalid.push(body);
  // Lifecycle events (tenant.created, budget.created, …) go to the operator's subscription too.
  if (!isBudgetEvent(json.event_type)) {
    res.writeHead(204).end();
    return;
  }
  const parsed = BudgetEventMessage.safeParse(json);
  if (!parsed.success || !publishedSchema(json)) {
    invalid.push(body);
    res.writeHead(204).end();
    return;
  }
  const event = parsed.data;
  const attempt = Number(req.headers['x-cycles-delivery-attempt']);
  const signed = verifySignature(SECRET, body, Array.isArray(header) ? header[0] : header);
  received.push({ event, attempt, signed });
  res.writeHead(answer(event, attempt)).end();
});
/** Takes every delivery and never answers: a receiver that is down behind a load balancer. */
const deadReceiver = createServer(() => {
  hanging++;
});

const listen = (server: Server) =>
  new Promise<string>((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/budget`);
    }),
  );

const env: Record<string, string> = {
  EVENTS_ENABLED: 'true',
  WEBHOOK_SECRET: SECRET,
  // Far longer than any request may take: a request that waited on a delivery would show it.
  WEBHOOK_TIMEOUT_MS: '10000',
  STREAM_POLL_INTERVAL_MS: '50',
  REFUSAL_EVENT_INTERVAL_MS: '0',
};
// Before the stack starts (hooks run in order): the receivers' URLs are its configuration.
beforeAll(async () => {
  env.WEBHOOK_URLS = `${await listen(receiver)},${await listen(deadReceiver)}`;
});
afterAll(() => {
  receiver.closeAllConnections();
  deadReceiver.closeAllConnections();
  receiver.close();
  deadReceiver.close();
});

const clock = testClock();
const stack = useTestStack({ env, clock });
const api = reservationsApi(stack);

let sweepOnce: typeof import('../../functions/jobs/expire-reservations.js')['sweepOnce'];
beforeAll(async () => {
  sweepOnce = (await import('../../functions/jobs/expire-reservations.js')).sweepOnce;
});

/** Deliveries of events of `scope` (every one verified against its schema on receipt). */
const deliveriesOf = (scope: string, type?: string) =>
  received.filter((d) => d.event.scope === scope && (!type || d.event.event_type === type));

/** Waits until `done` holds of what has been received, then a little longer for stragglers. */
async function receivedUntil(done: () => boolean, settleMs = 400): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for webhook deliveries');
    await sleep(50);
  }
  await sleep(settleMs);
}

const percentOf = (d: Delivery) =>
  d.event.event_type === 'budget.threshold_crossed' ? d.event.data.threshold_percent : undefined;

const distinctIds = (ds: readonly Delivery[]) => new Set(ds.map((d) => d.event.event_id));

describe('budget events on webhooks', () => {
  it('reports 50 %, 80 % and 100 % of a budget once each, signed, under 20 concurrent clients', async () => {
    const t = await givenTenantWith(stack, { '': 100_000, 'workspace:w': 1_000 });
    const w = scopeOf(t, 'workspace:w');
    const before = Date.now();

    const holds = await Promise.all(
      Array.from({ length: 20 }, () => api.reserve(t, { estimate: usd(50) })),
    );
    const commits = await Promise.all(
      holds.map((h) => api.commit(t, h.body.reservation_id, { actual: usd(50) })),
    );
    await receivedUntil(
      () =>
        deliveriesOf(w, 'budget.threshold_crossed').length >= 3 &&
        deliveriesOf(w, 'budget.exhausted').length >= 1,
    );

    expect(holds.map((h) => h.status)).toEqual(Array(20).fill(200));
    expect(commits.map((c) => c.status)).toEqual(Array(20).fill(200));
    const crossings = deliveriesOf(w, 'budget.threshold_crossed');
    expect(crossings.map(percentOf).sort()).toEqual([100, 50, 80]);
    expect(distinctIds(crossings).size).toBe(3);
    expect(crossings.every((d) => d.signed && d.attempt === 1)).toBe(true);
    // Timed to the write (within the poll interval), not rounded to DynamoDB Local's minute.
    for (const c of crossings) {
      expect(Date.parse(c.event.timestamp)).toBeGreaterThanOrEqual(before);
      expect(Date.parse(c.event.timestamp)).toBeLessThanOrEqual(Date.now());
    }
    expect(crossings[0]?.event).toMatchObject({
      tenant_id: t.tenant,
      category: 'budget',
      source: 'budget-reservations',
      data: { scope: w, unit: 'USD_MICROCENTS', allocated: 1_000, direction: 'rising' },
    });
    expect(deliveriesOf(w, 'budget.exhausted')).toHaveLength(1);
    // The tenant's root budget (100,000) reached none of its thresholds.
    expect(deliveriesOf(scopeOf(t, ''), 'budget.threshold_crossed')).toEqual([]);
  });

  it("reports a budget's own thresholds, set at creation and changed later", async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 100_000);
    const w = scopeOf(t, 'workspace:w');
    const created = await request('POST', `${stack.adminUrl}/v1/admin/budgets`, {
      headers: adminHeaders,
      body: { scope: w, unit: 'USD_MICROCENTS', allocated: usd(1_000), thresholds: [75, 25] },
    });
    const query = `scope=${encodeURIComponent(w)}&unit=USD_MICROCENTS`;
    const outOfRange = await request('PATCH', `${stack.adminUrl}/v1/admin/budgets?${query}`, {
      headers: adminHeaders,
      body: { thresholds: [50, 101] },
    });

    await api.reserve(t, { estimate: usd(300) });
    const changed = await request('PATCH', `${stack.adminUrl}/v1/admin/budgets?${query}`, {
      headers: adminHeaders,
      body: { thresholds: [40] },
    });
    await api.reserve(t, { estimate: usd(500) });
    await receivedUntil(() => deliveriesOf(w, 'budget.threshold_crossed').length >= 2);
    const reset = await request('PATCH', `${stack.adminUrl}/v1/admin/budgets?${query}`, {
      headers: adminHeaders,
      body: { thresholds: null },
    });

    expectError(outOfRange, 400, 'INVALID_REQUEST');
    expect(created.body.thresholds).toEqual([25, 75]);
    expect(changed.body.thresholds).toEqual([40]);
    expect(reset.body.thresholds).toBeUndefined();
    expect(deliveriesOf(w, 'budget.threshold_crossed').map(percentOf)).toEqual([25, 40]);
  });

  it('reports debt incurred by an overdraft commit, then over-limit entered when the limit drops', async () => {
    const t = await givenTenantWith(stack, {
      '': 100_000,
      'workspace:w': { allocated: 100, overdraftLimit: 500 },
    });
    const w = scopeOf(t, 'workspace:w');
    const hold = await api.reserve(t, {
      estimate: usd(100),
      overage_policy: 'ALLOW_WITH_OVERDRAFT',
    });

    const committed = await api.commit(t, hold.body.reservation_id, { actual: usd(400) });
    await receivedUntil(() => deliveriesOf(w, 'budget.debt_incurred').length >= 1, 0);
    const lowered = await request(
      'PATCH',
      `${stack.adminUrl}/v1/admin/budgets?scope=${encodeURIComponent(w)}&unit=USD_MICROCENTS`,
      { headers: adminHeaders, body: { overdraft_limit: usd(200) } },
    );
    await receivedUntil(() => deliveriesOf(w, 'budget.over_limit_entered').length >= 1);

    expect(committed.status).toBe(200);
    expect(lowered.status).toBe(200);
    expect(deliveriesOf(w, 'budget.debt_incurred').map((d) => d.event.data)).toEqual([
      {
        scope: w,
        unit: 'USD_MICROCENTS',
        debt_incurred: 300,
        total_debt: 300,
        overdraft_limit: 500,
      },
    ]);
    expect(deliveriesOf(w, 'budget.over_limit_entered').map((d) => d.event.data)).toEqual([
      {
        scope: w,
        unit: 'USD_MICROCENTS',
        debt: 300,
        overdraft_limit: 200,
        is_over_limit: true,
        debt_utilization: 1.5,
      },
    ]);
    expect(deliveriesOf(w, 'budget.exhausted')).toHaveLength(1);
  });

  it('reports a reservation the sweeper expired unsettled', async () => {
    const t = await givenTenantWith(stack, { '': 100_000, 'workspace:w': 1_000 });
    const w = scopeOf(t, 'workspace:w');
    const hold = await api.reserve(t, { estimate: usd(10), ttl_ms: 1_000, grace_period_ms: 0 });

    clock.advance(2_000);
    await sweepOnce();
    await receivedUntil(() => deliveriesOf(w, 'reservation.expired').length >= 1);

    const [expired] = deliveriesOf(w, 'reservation.expired');
    expect(expired?.event).toMatchObject({
      tenant_id: t.tenant,
      category: 'reservation',
      actor: { type: 'system' },
      data: {
        reservation_id: hold.body.reservation_id,
        scope: w,
        unit: 'USD_MICROCENTS',
        estimated_amount: 10,
        ttl_ms: 1_000,
        expired_at: new Date(Number(hold.body.expires_at_ms)).toISOString(),
        subject: { workspace: 'w' },
      },
    });
    expect(expired?.signed).toBe(true);
  });

  it('reports a refused reservation with its reason, key and request', async () => {
    const t = await givenTenantWith(stack, { '': 100_000, 'workspace:w': 100 });
    const w = scopeOf(t, 'workspace:w');

    const refused = await api.reserve(t, { estimate: usd(500) });
    await receivedUntil(() => deliveriesOf(w, 'reservation.denied').length >= 1);

    expect(refused.status).toBe(409);
    expect(deliveriesOf(w, 'reservation.denied').map((d) => d.event)).toEqual([
      expect.objectContaining({
        actor: { type: 'api_key', key_id: t.keyId },
        request_id: refused.headers.get('x-request-id'),
        data: expect.objectContaining({
          reason_code: 'BUDGET_EXCEEDED',
          requested_amount: 500,
          remaining: 100,
          action: { kind: 'llm.completion', name: 'model-x' },
        }),
      }),
    ]);
  });

  it('reports a dry run answered DENY and a decide answered DENY, but not a decide replayed', async () => {
    const dry = await givenTenantWith(stack, { '': 100_000, 'workspace:w': 100 });
    const decided = await givenTenantWith(stack, { '': 100_000, 'workspace:w': 100 });
    const decideBody = {
      idempotency_key: 'deny-once',
      subject: { workspace: 'w' },
      action: { kind: 'llm.completion', name: 'model-x' },
      estimate: usd(500),
    };
    const decide = () =>
      request('POST', `${stack.runtimeUrl}/v1/decide`, {
        headers: decided.headers,
        body: decideBody,
      });

    const dryRun = await api.reserve(dry, { estimate: usd(500), dry_run: true });
    const first = await decide();
    // Past the refusal sampling interval: a replay that did report would not be held back.
    clock.advance(2_000);
    const replay = await decide();
    await receivedUntil(
      () =>
        deliveriesOf(scopeOf(dry, 'workspace:w'), 'reservation.denied').length >= 1 &&
        deliveriesOf(scopeOf(decided, 'workspace:w'), 'reservation.denied').length >= 1,
    );
    // A wrongly reported replay would come through the same stream before this later event.
    await api.reserve(decided, { estimate: usd(60) });
    await receivedUntil(
      () => deliveriesOf(scopeOf(decided, 'workspace:w'), 'budget.threshold_crossed').length >= 1,
    );

    expect([dryRun.body.decision, first.body.decision, replay.body.decision]).toEqual([
      'DENY',
      'DENY',
      'DENY',
    ]);
    for (const [t, res] of [
      [dry, dryRun],
      [decided, first],
    ] as const) {
      expect(
        deliveriesOf(scopeOf(t, 'workspace:w'), 'reservation.denied').map((d) => d.event),
      ).toEqual([
        expect.objectContaining({
          request_id: res.headers.get('x-request-id'),
          data: expect.objectContaining({ reason_code: 'BUDGET_EXCEEDED', requested_amount: 500 }),
        }),
      ]);
    }
  });

  it('reports a refund as custom.refund, derived from its audit record', async () => {
    const t = await givenTenantWith(stack, { '': 100_000, 'workspace:w': 10_000 });
    const w = scopeOf(t, 'workspace:w');
    const r = await api.reserve(t, { estimate: usd(100) });
    await api.commit(t, r.body.reservation_id, { actual: usd(80) });

    const refunded = await api.refund(t, r.body.reservation_id, {
      amount: usd(30),
      reason: 'provider refunded a failed call',
    });
    await receivedUntil(() => deliveriesOf(w, 'custom.refund').length >= 1);

    expect(refunded.status, JSON.stringify(refunded.body)).toBe(200);
    const refunds = deliveriesOf(w, 'custom.refund');
    expect(distinctIds(refunds).size).toBe(1);
    expect(refunds[0]?.signed).toBe(true);
    expect(refunds[0]?.event).toMatchObject({
      tenant_id: t.tenant,
      category: 'budget',
      source: 'budget-reservations',
      actor: { type: 'api_key', key_id: t.keyId },
      data: {
        refund_id: refunded.body.refund_id,
        reservation_id: r.body.reservation_id,
        unit: 'USD_MICROCENTS',
        amount: 30,
        refunded_total: 30,
        charged: 80,
        reason: 'provider refunded a failed call',
        scopes: [scopeOf(t, ''), w],
      },
    });
    // Kept in the event log like every event (its row of AUDIT_EVENTS): listed by its type.
    const logged = await request<Json>(
      'GET',
      `${stack.adminUrl}/v1/admin/events?tenant_id=${t.tenant}&event_type=custom.refund`,
      { headers: adminHeaders },
    );
    expect(logged.status).toBe(200);
    expect((logged.body.events as Json[]).map((e) => e.event_id)).toEqual([
      refunds[0]?.event.event_id,
    ]);
  });

  it("logs a change of a budget's cap of one reservation as budget.updated, from its audit record", async () => {
    const t = await givenTenant(stack);
    const w = scopeOf(t, 'workspace:w');
    await givenBudget(stack, t, 'workspace:w', 10_000);
    const query = `scope=${encodeURIComponent(w)}&unit=USD_MICROCENTS`;

    const capped = await request('PATCH', `${stack.adminUrl}/v1/admin/budgets?${query}`, {
      headers: adminHeaders,
      body: { max_reservation_amount: usd(500) },
    });
    const updated = async () => {
      const page = await request<Json>(
        'GET',
        `${stack.adminUrl}/v1/admin/events?tenant_id=${t.tenant}&event_type=budget.updated`,
        { headers: adminHeaders },
      );
      return page.body.events as Json[];
    };
    const deadline = Date.now() + 20_000;
    while ((await updated()).length === 0 && Date.now() < deadline) await sleep(50);

    expect(capped.status, JSON.stringify(capped.body)).toBe(200);
    const [event, ...others] = await updated();
    expect(others).toEqual([]);
    expect(event).toMatchObject({ scope: w, data: { scope: w, operation: 'UPDATE' } });
    expect(eventErrors(event)).toEqual([]);
  });

  it('delivers on the third attempt to a receiver that answers 500 twice (1 s, then 2 s: the default retry policy)', async () => {
    const t = await givenTenantWith(stack, { '': 100_000, 'workspace:w': 100 });
    const w = scopeOf(t, 'workspace:w');
    answer = (event, attempt) => (event.tenant_id === t.tenant && attempt <= 2 ? 500 : 204);

    await api.reserve(t, { estimate: usd(60) });
    await receivedUntil(() =>
      deliveriesOf(w, 'budget.threshold_crossed').some((d) => d.attempt === 3),
    );
    answer = () => 204;

    const deliveries = deliveriesOf(w, 'budget.threshold_crossed');
    expect(deliveries.map((d) => d.attempt)).toEqual([1, 2, 3]);
    expect(distinctIds(deliveries).size).toBe(1);
    expect(deliveries.every((d) => d.signed)).toBe(true);
  });

  it('reports a sharded budget crossing each threshold with one id per threshold', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 100_000);
    await givenBudget(stack, t, 'workspace:w', 1_000, { shards: 4 });
    const w = scopeOf(t, 'workspace:w');

    const holds = await Promise.all(
      Array.from({ length: 20 }, () => api.reserve(t, { estimate: usd(50) })),
    );
    await receivedUntil(
      () =>
        new Set(deliveriesOf(w, 'budget.threshold_crossed').map(percentOf)).size === 3 &&
        deliveriesOf(w, 'budget.exhausted').length >= 1,
    );

    expect(holds.map((h) => h.status)).toEqual(Array(20).fill(200));
    const crossings = deliveriesOf(w, 'budget.threshold_crossed');
    // Several shard writes may see one crossing: at least once, always with the same id.
    expect(distinctIds(crossings).size).toBe(3);
    expect(distinctIds(deliveriesOf(w, 'budget.exhausted')).size).toBe(1);
  });

  it('keeps reservations fast while a receiver takes deliveries and never answers', async () => {
    const t = await givenTenantWith(stack, { '': 100_000, 'workspace:w': 1_000 });
    const w = scopeOf(t, 'workspace:w');

    const latencies: number[] = [];
    for (let i = 0; i < 10; i++) {
      const started = performance.now();
      const res = await api.reserve(t, { estimate: usd(100) });
      latencies.push(performance.now() - started);
      expect(res.status).toBe(200);
    }
    await receivedUntil(() => deliveriesOf(w, 'budget.exhausted').length >= 1, 0);

    // The dead receiver holds deliveries open (10 s timeout each) and more wait behind them;
    // no request waited on one, and the other receiver got this budget's events meanwhile.
    expect(hanging).toBeGreaterThan(0);
    expect(stack.deliveries?.idle).toBe(false);
    expect(Math.max(...latencies)).toBeLessThan(2_000);
  });

  it('reports the thresholds of a rolling budget again in its next period, with new ids', async () => {
    const t = await givenTenant(stack);
    const root = scopeOf(t, '');
    const day = 86_400_000;
    const end = Math.floor(clock.now() / day) * day + day;
    clock.advanceTo(end - 60_000);
    const created = await request('POST', `${stack.adminUrl}/v1/admin/budgets`, {
      headers: adminHeaders,
      body: { scope: root, unit: 'USD_MICROCENTS', allocated: usd(100), period: 'DAILY' },
    });
    const reserveAtRoot = () =>
      api.reserve(t, { subject: { tenant: t.tenant }, estimate: usd(60), ttl_ms: 3_600_000 });

    await reserveAtRoot();
    clock.advanceTo(end);
    await reserveAtRoot();
    await receivedUntil(() => deliveriesOf(root, 'budget.threshold_crossed').length >= 2);

    expect(created.status).toBe(201);
    const crossings = deliveriesOf(root, 'budget.threshold_crossed');
    expect(crossings.map(percentOf)).toEqual([50, 50]);
    expect(distinctIds(crossings).size).toBe(2);
    // Two events of two transactions: delivered in either order.
    expect(crossings.map((d) => String((d.event.data as Json).period_start)).sort()).toEqual([
      new Date(end - day).toISOString(),
      new Date(end).toISOString(),
    ]);
  });
});

describe('every delivery received', () => {
  it('matched its published schema, was signed with the configured secret', () => {
    expect(invalid).toEqual([]);
    expect(received.length).toBeGreaterThan(0);
    for (const d of received) {
      expect(d.signed, d.event.event_id).toBe(true);
      expect(d.event.event_id).toMatch(/^evt_[0-9a-f]{32}$/);
    }
  });
});
