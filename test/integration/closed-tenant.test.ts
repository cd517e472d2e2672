import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import {
  adminHeaders,
  type GivenTenant,
  givenBudget,
  givenClosableTenant,
  reserveBody,
  usd,
} from '../helpers/fixtures.js';
import { type Json, type Response, request } from '../helpers/http.js';
import { useTestStack } from '../helpers/scaffold.js';

// The closed-tenant rule of the conformance statement and the runtime reference's ERROR
// SEMANTICS (issue 27 point 6): once a tenant is CLOSED, a fresh reserve, commit, release, extend
// or event (and of ours a charge or refund, as a commit) answers 409 TENANT_CLOSED (before any reservation-state error), a dry run or decide
// answers 200 DENY with reason_code TENANT_CLOSED, a same-key replay answers what it answered
// before, and reads go on.
//
// The close revokes the tenant's keys, so these are the requests of the window the rule exists
// for: a key cached as valid (the cache's maximum, 5 s, on a frozen clock) and every process's
// tenant state still cached as ACTIVE. What refuses them is the close itself: every budget is
// closed before the tenant's record flips.
const clock = testClock({ frozen: true });
const stack = useTestStack({ clock, env: { API_KEY_CACHE_TTL_MS: '5000' } });

const runtime = (t: GivenTenant, method: string, path: string, body?: Json) =>
  request(method, `${stack.runtimeUrl}${path}`, { headers: t.headers, body });
const admin = (method: string, path: string, body?: Json) =>
  request(method, `${stack.adminUrl}${path}`, { headers: adminHeaders, body });

let t: GivenTenant;
const before: Record<string, { body: Json; answer: Response }> = {};
let open: string; // a reservation the close releases
let other: string; // another, extended before the close
let charging: string; // one charged in part before the close, which releases it
let committed: string; // one committed, then refunded in part before the close
let tree: string[]; // a parent, its child and grandchild (issue 29): the close releases them all

/** A request made before the close, kept to replay it after. */
async function made(name: string, method: string, path: string, body: Json) {
  const answer = await runtime(t, method, path, body);
  expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
  before[name] = { body, answer };
  return answer;
}
const replay = (name: string, method: string, path: string) =>
  runtime(t, method, path, before[name]?.body);

beforeAll(async () => {
  t = await givenClosableTenant(stack);
  await givenBudget(stack, t, '', 10_000_000);
  await givenBudget(stack, t, 'workspace:w', 10_000_000);
  const first = await made('reserve', 'POST', '/v1/reservations', reserveBody());
  open = String(first.body.reservation_id);
  const second = await made('second', 'POST', '/v1/reservations', reserveBody());
  other = String(second.body.reservation_id);
  const third = await made('third', 'POST', '/v1/reservations', reserveBody());
  committed = String(third.body.reservation_id);
  await made('commit', 'POST', `/v1/reservations/${committed}/commit`, {
    idempotency_key: randomUUID(),
    actual: usd(80),
  });
  await made('refund', 'POST', `/v1/reservations/${committed}/refunds`, {
    idempotency_key: randomUUID(),
    amount: usd(10),
    reason: 'provider refunded it',
  });
  const fourth = await made('fourth', 'POST', '/v1/reservations', reserveBody());
  charging = String(fourth.body.reservation_id);
  await made('charge', 'POST', `/v1/reservations/${charging}/charges`, {
    idempotency_key: randomUUID(),
    amount: usd(20),
  });
  await made('extend', 'POST', `/v1/reservations/${other}/extend`, {
    idempotency_key: randomUUID(),
    extend_by_ms: 1_000,
  });
  await made('decide', 'POST', '/v1/decide', reserveBody());
  await made('event', 'POST', '/v1/events', {
    idempotency_key: randomUUID(),
    subject: { workspace: 'w' },
    action: { kind: 'tool.call', name: 'search' },
    actual: usd(5),
  });

  const eventId = before.event?.answer.body.event_id;
  await made('eventRefund', 'POST', `/v1/events/${eventId}/refunds`, {
    idempotency_key: randomUUID(),
    amount: usd(1),
    reason: 'provider refunded it',
  });

  const root = await made('root', 'POST', '/v1/reservations', reserveBody());
  const rootId = String(root.body.reservation_id);
  const child = await made('delegate', 'POST', `/v1/reservations/${rootId}/delegations`, {
    idempotency_key: randomUUID(),
    amount: usd(60),
  });
  const childId = String(child.body.reservation_id);
  const grandchild = await made('grandchild', 'POST', `/v1/reservations/${childId}/delegations`, {
    idempotency_key: randomUUID(),
    amount: usd(20),
  });
  tree = [rootId, childId, String(grandchild.body.reservation_id)];

  const closed = await admin('PATCH', `/v1/admin/tenants/${t.tenant}`, { status: 'CLOSED' });
  expect(closed.body.status).toBe('CLOSED');
});

describe('after its tenant is CLOSED', () => {
  it('refuses a fresh reserve with 409 TENANT_CLOSED, and replays an earlier one', async () => {
    const fresh = await runtime(t, 'POST', '/v1/reservations', reserveBody());
    const again = await replay('reserve', 'POST', '/v1/reservations');

    expectError(fresh, 409, 'TENANT_CLOSED', 'runtime');
    expect(again.status).toBe(200);
    const { remaining_ttl_ms: _, ...stored } = before.reserve?.answer.body ?? {};
    expect(again.body).toMatchObject(stored);
  });

  it('refuses a fresh commit with TENANT_CLOSED before RESERVATION_FINALIZED, and replays an earlier one', async () => {
    // The close released it: a commit now would otherwise be 409 RESERVATION_FINALIZED.
    const fresh = await runtime(t, 'POST', `/v1/reservations/${open}/commit`, {
      idempotency_key: randomUUID(),
      actual: usd(10),
    });
    const commitPath = `/v1/reservations/${before.third?.answer.body.reservation_id}/commit`;
    const again = await replay('commit', 'POST', commitPath);

    expectError(fresh, 409, 'TENANT_CLOSED', 'runtime');
    expect(again.status).toBe(200);
    expect(again.body).toEqual(before.commit?.answer.body);
  });

  it('refuses a fresh release and a fresh extend, and replays an earlier extend', async () => {
    const release = await runtime(t, 'POST', `/v1/reservations/${other}/release`, {
      idempotency_key: randomUUID(),
    });
    const extend = await runtime(t, 'POST', `/v1/reservations/${other}/extend`, {
      idempotency_key: randomUUID(),
      extend_by_ms: 1_000,
    });
    const again = await replay('extend', 'POST', `/v1/reservations/${other}/extend`);

    expectError(release, 409, 'TENANT_CLOSED', 'runtime');
    expectError(extend, 409, 'TENANT_CLOSED', 'runtime');
    expect(again.status).toBe(200);
    expect(again.body.expires_at_ms).toBe(before.extend?.answer.body.expires_at_ms);
  });

  it('refuses a fresh event, and replays an earlier one', async () => {
    const fresh = await runtime(t, 'POST', '/v1/events', {
      idempotency_key: randomUUID(),
      subject: { workspace: 'w' },
      action: { kind: 'tool.call', name: 'search' },
      actual: usd(5),
    });
    const again = await replay('event', 'POST', '/v1/events');

    expectError(fresh, 409, 'TENANT_CLOSED', 'runtime');
    expect(again.status).toBe(201);
    expect(again.body).toEqual(before.event?.answer.body);
  });

  // Issue 28's writes follow the rule for commits: a charge is part of a commit, and a refund
  // would raise what a closed tenant's budgets hold.
  it('refuses a fresh charge with TENANT_CLOSED before RESERVATION_FINALIZED, and replays an earlier one', async () => {
    const fresh = await runtime(t, 'POST', `/v1/reservations/${charging}/charges`, {
      idempotency_key: randomUUID(),
      amount: usd(5),
    });
    const again = await replay('charge', 'POST', `/v1/reservations/${charging}/charges`);
    const listed = await runtime(t, 'GET', `/v1/reservations/${charging}/charges`);

    expectError(fresh, 409, 'TENANT_CLOSED', 'runtime');
    expect(again.status).toBe(200);
    expect(again.body).toEqual(before.charge?.answer.body);
    expect((listed.body.charges as Json[]).map((c) => c.amount)).toEqual([usd(20)]);
  });

  it('refuses a fresh refund of a reservation or an event, the operator’s too, and replays an earlier one', async () => {
    const refund = { amount: usd(5), reason: 'provider refunded it' };
    const ofReservation = await runtime(t, 'POST', `/v1/reservations/${committed}/refunds`, {
      idempotency_key: randomUUID(),
      ...refund,
    });
    const eventId = before.event?.answer.body.event_id;
    const ofEvent = await runtime(t, 'POST', `/v1/events/${eventId}/refunds`, {
      idempotency_key: randomUUID(),
      ...refund,
    });
    const byOperator = await admin('POST', `/v1/reservations/${committed}/refunds`, {
      idempotency_key: randomUUID(),
      ...refund,
    });
    const again = await replay('refund', 'POST', `/v1/reservations/${committed}/refunds`);
    const eventAgain = await replay('eventRefund', 'POST', `/v1/events/${eventId}/refunds`);

    expectError(ofReservation, 409, 'TENANT_CLOSED', 'runtime');
    expectError(ofEvent, 409, 'TENANT_CLOSED', 'runtime');
    expectError(byOperator, 409, 'TENANT_CLOSED', 'admin');
    expect(again.status).toBe(200);
    expect(again.body).toEqual(before.refund?.answer.body);
    expect(eventAgain.body).toEqual(before.eventRefund?.answer.body);
  });

  it('answers a dry run and a fresh decide 200 DENY TENANT_CLOSED, and replays an earlier decide', async () => {
    const dry = await runtime(t, 'POST', '/v1/reservations', reserveBody({ dry_run: true }));
    const decided = await runtime(t, 'POST', '/v1/decide', reserveBody());
    const again = await replay('decide', 'POST', '/v1/decide');

    for (const res of [dry, decided]) {
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ decision: 'DENY', reason_code: 'TENANT_CLOSED' });
    }
    expect(again.body).toEqual(before.decide?.answer.body);
  });

  it('keeps reads available', async () => {
    const got = await runtime(t, 'GET', `/v1/reservations/${open}`);
    const listed = await runtime(t, 'GET', '/v1/reservations');
    const balances = await runtime(t, 'GET', `/v1/balances?tenant=${t.tenant}`);

    expect(got.body.status).toBe('RELEASED');
    expect(listed.status).toBe(200);
    expect(balances.status).toBe(200);
  });

  it('refuses the operator’s force-release too (the close released what was open)', async () => {
    const forced = await admin('POST', `/v1/reservations/${other}/release`, {
      idempotency_key: randomUUID(),
    });

    expectError(forced, 409, 'TENANT_CLOSED', 'admin');
  });

  // Issue 29's delegations: a delegation is a fresh reserve out of a hold, refused as one; the
  // close released the tree children first (a parent with ACTIVE children is released only
  // through them), every hold back on the budgets.
  it('refuses a fresh delegation, replays an earlier one, and released the tree children first', async () => {
    const [root, child, grandchild] = tree;
    const fresh = await runtime(t, 'POST', `/v1/reservations/${child}/delegations`, {
      idempotency_key: randomUUID(),
      amount: usd(1),
    });
    const again = await replay('delegate', 'POST', `/v1/reservations/${root}/delegations`);
    const states = await Promise.all(
      tree.map(async (id) => (await runtime(t, 'GET', `/v1/reservations/${id}`)).body.status),
    );
    const balances = await runtime(t, 'GET', `/v1/balances?tenant=${t.tenant}`);
    const trail = await admin('GET', `/v1/admin/audit/logs?tenant_id=${t.tenant}&limit=100`);

    expectError(fresh, 409, 'TENANT_CLOSED', 'runtime');
    expect(again.status).toBe(200);
    const { remaining_ttl_ms: _, ...stored } = before.delegate?.answer.body ?? {};
    expect(again.body).toMatchObject(stored);
    expect(states).toEqual(['RELEASED', 'RELEASED', 'RELEASED']);
    for (const b of balances.body.balances as Json[]) expect(b.reserved).toEqual(usd(0));
    // Each released by the close's cascade, audited (a parent's release, conditioned on no
    // ACTIVE child, can only follow its children's).
    const released = (trail.body.logs as Json[])
      .filter((e) => e.operation === 'releaseReservation' && tree.includes(String(e.resource_id)))
      .map((e) => e.resource_id);
    expect(new Set(released)).toEqual(new Set([grandchild, child, root]));
  });

  it('answers 401 once the revoked key leaves the cache', async () => {
    clock.advance(5_000);

    const res = await runtime(t, 'POST', '/v1/reservations', reserveBody());

    expectError(res, 401, 'UNAUTHORIZED', 'runtime');
  });
});
