import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { L, ledgers } from '../helpers/balances.js';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import type { GivenTenant } from '../helpers/fixtures.js';
import {
  adminHeaders,
  givenBudget,
  givenTenant,
  givenTenantWith,
  usd,
} from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// Issue 29: sub-agent budgets (docs/decisions.md § Delegations). Server time stands still until
// a test moves it (expiry), so each test runs alone on its own tenant.
const clock = testClock({ frozen: true });
const stack = useTestStack({ clock });
const api = reservationsApi(stack);

const sweepOnce = async () => {
  const { sweepOnce: sweep } = await import('../../functions/jobs/expire-reservations.js');
  return sweep();
};

const delegate = (t: GivenTenant, parent: unknown, body: Json = {}) =>
  request('POST', `${stack.runtimeUrl}/v1/reservations/${String(parent)}/delegations`, {
    headers: t.headers,
    body: { idempotency_key: randomUUID(), ...body },
  });
const delegations = (t: GivenTenant, parent: unknown, query = '') =>
  request('GET', `${stack.runtimeUrl}/v1/reservations/${String(parent)}/delegations${query}`, {
    headers: t.headers,
  });
/** What a reservation holds now (the charges listing's `held`). */
const heldBy = async (t: GivenTenant, id: unknown) =>
  ((await api.charges(t, id)).body.held as { amount: number }).amount;

/** A reservation of `estimate` under workspace w (budgets '' and 'workspace:w'). */
async function parentOf(estimate: number, extra: Json = {}) {
  const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
  const res = await api.reserve(t, { estimate: usd(estimate), ttl_ms: 60_000, ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { t, id: String(res.body.reservation_id), expiresAtMs: Number(res.body.expires_at_ms) };
}

async function childOf(t: GivenTenant, parent: string, amount: number, body: Json = {}) {
  const res = await delegate(t, parent, { amount: usd(amount), ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return String(res.body.reservation_id);
}

describe('POST /v1/reservations/{id}/delegations', () => {
  it('moves part of the parent’s hold to a child: no scope’s reserved or remaining changes', async () => {
    const { t, id, expiresAtMs } = await parentOf(500);

    const res = await delegate(t, id, { amount: usd(200), ttl_ms: 10_000 });

    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      decision: 'ALLOW',
      reserved: usd(200),
      affected_scopes: [`tenant:${t.tenant}`, `tenant:${t.tenant}/workspace:w`],
      scope_path: `tenant:${t.tenant}/workspace:w`,
      expires_at_ms: clock.now() + 10_000,
      remaining_ttl_ms: 10_000,
    });
    expect(Object.keys(res.body).sort()).toEqual(
      [
        'affected_scopes',
        'balances',
        'decision',
        'expires_at_ms',
        'remaining_ttl_ms',
        'reservation_id',
        'reserved',
        'scope_path',
      ].sort(),
    );
    expect(await heldBy(t, id)).toBe(300);
    expect(await heldBy(t, res.body.reservation_id)).toBe(200);
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 0, 500, 0, 9_500),
      'workspace:w': L(1_000, 0, 500, 0, 500),
    });
    // GET keeps the protocol's shape.
    const got = await api.getReservation(t, res.body.reservation_id);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ status: 'ACTIVE', reserved: usd(200) });
    // Audited: the parent is the resource, the child named in the detail.
    const audit = await request(
      'GET',
      `${stack.adminUrl}/v1/admin/audit/logs?tenant_id=${t.tenant}&operation=delegateReservation`,
      { headers: adminHeaders },
    );
    expect(audit.body.logs).toEqual([
      expect.objectContaining({
        operation: 'delegateReservation',
        resource_type: 'reservation',
        resource_id: id,
        key_id: t.keyId,
        metadata: expect.objectContaining({
          detail: expect.objectContaining({
            parent_reservation_id: id,
            child_reservation_id: res.body.reservation_id,
            amount: 200,
          }),
        }),
      }),
    ]);
    // A child never outlives its parent: a longer TTL is the parent's expiry.
    const long = await delegate(t, id, { amount: usd(10), ttl_ms: 3_600_000 });
    expect(long.body.expires_at_ms).toBe(expiresAtMs);
  });

  it('settles back: a child’s commit charges its actual, the rest returns to the parent', async () => {
    const { t, id } = await parentOf(500);
    const child = await childOf(t, id, 200);

    const committed = await api.commit(t, child, { actual: usd(120) });

    expect(committed.status, JSON.stringify(committed.body)).toBe(200);
    expect(committed.body).toMatchObject({ charged: usd(120), released: usd(80) });
    expect(await heldBy(t, id)).toBe(380);
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 120, 380, 0, 9_500),
      'workspace:w': L(1_000, 120, 380, 0, 500),
    });
    const parent = await api.commit(t, id, { actual: usd(300) });
    // What the parent still held (380, the child's 80 back included) less its actual.
    expect(parent.body).toMatchObject({ charged: usd(300), released: usd(80) });
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 420, 0, 0, 9_580),
      'workspace:w': L(1_000, 420, 0, 0, 580),
    });
  });

  it('refuses a parent’s commit while a child is ACTIVE (409 DELEGATIONS_ACTIVE)', async () => {
    const { t, id } = await parentOf(500);
    const child = await childOf(t, id, 100);

    const refused = await api.commit(t, id, { actual: usd(10) });

    expectError(refused, 409, 'DELEGATIONS_ACTIVE');
    expect(refused.body.details).toMatchObject({ active_delegations: [child] });
    await api.release(t, child);
    expect(await heldBy(t, id)).toBe(500);
    expect((await api.commit(t, id, { actual: usd(10) })).status).toBe(200);
    expect((await ledgers(stack, t))['workspace:w']).toEqual(L(1_000, 10, 0, 0, 990));
  });

  it('takes a child’s overage from the parent’s hold first, then the budget, by its policy', async () => {
    const rejecting = await parentOf(500, { overage_policy: 'REJECT' });
    const allowing = await parentOf(500, { overage_policy: 'ALLOW_IF_AVAILABLE' });
    const r = await childOf(rejecting.t, rejecting.id, 100);
    const a = await childOf(allowing.t, allowing.id, 100);
    const b = await childOf(allowing.t, allowing.id, 300);

    expectError(await api.commit(rejecting.t, r, { actual: usd(101) }), 409, 'BUDGET_EXCEEDED');
    // 150 over a hold of 100: 50 from the parent's 100 left.
    expect((await api.commit(allowing.t, a, { actual: usd(150) })).status).toBe(200);
    expect(await heldBy(allowing.t, allowing.id)).toBe(50);
    // 400 over 300: the parent's 50, then 50 of the budget's remaining.
    expect((await api.commit(allowing.t, b, { actual: usd(400) })).status).toBe(200);
    expect(await heldBy(allowing.t, allowing.id)).toBe(0);
    expect(await ledgers(stack, allowing.t)).toEqual({
      '': L(10_000, 550, 0, 0, 9_450),
      'workspace:w': L(1_000, 550, 0, 0, 450),
    });
    // A charge beyond the child's hold takes from the parent the same way.
    const c = await parentOf(300, { overage_policy: 'ALLOW_IF_AVAILABLE' });
    const cc = await childOf(c.t, c.id, 100);
    expect((await api.charge(c.t, cc, { amount: usd(130) })).status).toBe(200);
    expect(await heldBy(c.t, c.id)).toBe(170);
    expect((await ledgers(stack, c.t))['workspace:w']).toEqual(L(1_000, 130, 170, 0, 700));
  });

  it('gives a deeper level named for the child its own hold, needing its own budget', async () => {
    const { t, id } = await parentOf(500);

    expectError(
      await delegate(t, id, { amount: usd(100), subject: { agent: 'a1' } }),
      409,
      'BUDGET_EXCEEDED',
    );
    await givenBudget(stack, t, 'workspace:w/agent:a1', 150);
    const res = await delegate(t, id, { amount: usd(100), subject: { agent: 'a1' } });

    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.affected_scopes).toEqual([
      `tenant:${t.tenant}`,
      `tenant:${t.tenant}/workspace:w`,
      `tenant:${t.tenant}/workspace:w/agent:a1`,
    ]);
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 0, 500, 0, 9_500),
      'workspace:w': L(1_000, 0, 500, 0, 500),
      'workspace:w/agent:a1': L(150, 0, 100, 0, 50),
    });
    await api.commit(t, res.body.reservation_id, { actual: usd(40) });
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 40, 460, 0, 9_500),
      'workspace:w': L(1_000, 40, 460, 0, 500),
      'workspace:w/agent:a1': L(150, 40, 0, 0, 110),
    });
    // A level not below the parent's path is refused.
    expectError(
      await delegate(t, id, { amount: usd(1), subject: { workspace: 'x' } }),
      400,
      'INVALID_REQUEST',
    );
  });

  it('never lets a child hold more than its parent has left, nor nest past the depth', async () => {
    const { t, id } = await parentOf(500);
    expectError(await delegate(t, id, { amount: usd(501) }), 409, 'BUDGET_EXCEEDED');
    let parent = id;
    for (let depth = 1; depth <= 4; depth++) parent = await childOf(t, parent, 10);
    expectError(await delegate(t, parent, { amount: usd(1) }), 400, 'INVALID_REQUEST');
    expectError(
      await delegate(t, id, { amount: { unit: 'TOKENS', amount: 1 } }),
      400,
      'UNIT_MISMATCH',
    );
  });

  it('binds a child by its parent’s extension limit: a sub-agent extends no more often', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 1_000 });
    // Before the tenant's first runtime call, so no container has its settings cached yet.
    const patched = await request('PATCH', `${stack.adminUrl}/v1/admin/tenants/${t.tenant}`, {
      headers: adminHeaders,
      body: { max_reservation_extensions: 1 },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const parent = await api.reserve(t, { estimate: usd(500), ttl_ms: 60_000 });
    expect(parent.status, JSON.stringify(parent.body)).toBe(200);
    const child = await childOf(t, String(parent.body.reservation_id), 100, { ttl_ms: 10_000 });
    const extend = () =>
      request('POST', `${stack.runtimeUrl}/v1/reservations/${child}/extend`, {
        headers: t.headers,
        body: { idempotency_key: randomUUID(), extend_by_ms: 1_000 },
      });

    expect((await extend()).status).toBe(200);
    expectError(await extend(), 409, 'MAX_EXTENSIONS_EXCEEDED');
  });

  it('is idempotent with the same key; another payload is 409 IDEMPOTENCY_MISMATCH', async () => {
    const { t, id } = await parentOf(500);
    const body = { idempotency_key: randomUUID(), amount: usd(100) };

    const first = await delegate(t, id, body);
    const again = await delegate(t, id, body);
    const other = await delegate(t, id, { ...body, amount: usd(101) });

    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expectError(other, 409, 'IDEMPOTENCY_MISMATCH');
    expect(await heldBy(t, id)).toBe(400);
  });

  it('replays a key reused after its idempotency record expired from the child, or refuses another payload 409', async () => {
    const { t, id } = await parentOf(500);
    const body = { idempotency_key: randomUUID(), amount: usd(100) };
    const first = await delegate(t, id, body);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    // The record's 7 days pass (DynamoDB's TTL deletes it); the child's item stays.
    const { documentClient, tableName } = await import('../../functions/store/client.js');
    const { DeleteCommand } = await import('@aws-sdk/lib-dynamodb');
    const { keys } = await import('../../functions/store/keys.js');
    await documentClient.send(
      new DeleteCommand({
        TableName: tableName(),
        Key: keys.idempotency(t.tenant, 'delegate', body.idempotency_key),
      }),
    );

    const other = await delegate(t, id, { ...body, amount: usd(101) });
    const again = await delegate(t, id, body);

    expectError(other, 409, 'IDEMPOTENCY_MISMATCH');
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    const { remaining_ttl_ms: _, ...stored } = first.body;
    expect(again.body).toMatchObject(stored);
    expect(await heldBy(t, id)).toBe(400);
  });

  it('delegates only from the caller’s own tenant, with reservations:create', async () => {
    const { t, id } = await parentOf(500);
    const other = await givenTenantWith(stack, { '': 1_000 });
    const readOnly = await givenTenant(stack, ['reservations:list']);

    expectError(await delegate(other, id, { amount: usd(1) }), 403, 'FORBIDDEN');
    expectError(await delegate(readOnly, id, { amount: usd(1) }), 403, 'FORBIDDEN');
    expect(await heldBy(t, id)).toBe(500);
  });

  it('releases a parent’s children (and theirs) with it: every hold returns', async () => {
    const { t, id } = await parentOf(500);
    const child = await childOf(t, id, 200);
    const grandchild = await childOf(t, child, 50);
    await api.charge(t, grandchild, { amount: usd(20) });

    const released = await api.release(t, id);

    expect(released.status, JSON.stringify(released.body)).toBe(200);
    expect(released.body.released).toEqual(usd(480));
    expect((await api.getReservation(t, child)).body.status).toBe('RELEASED');
    expect((await api.getReservation(t, grandchild)).body.status).toBe('RELEASED');
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 20, 0, 0, 9_980),
      'workspace:w': L(1_000, 20, 0, 0, 980),
    });
  });

  it('lists a reservation’s children with their state and use, paged', async () => {
    const { t, id } = await parentOf(500);
    const a = await childOf(t, id, 100);
    const b = await childOf(t, id, 50);
    await api.commit(t, a, { actual: usd(70) });

    const first = await delegations(t, id, '?limit=1');
    const rest = await delegations(t, id, `?cursor=${String(first.body.next_cursor)}`);

    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ reservation_id: id, status: 'ACTIVE', held: usd(380) });
    expect(first.body.delegations).toEqual([
      expect.objectContaining({
        reservation_id: a,
        status: 'COMMITTED',
        depth: 1,
        reserved: usd(100),
        held: usd(0),
        charged: usd(70),
      }),
    ]);
    expect(rest.body.delegations).toEqual([
      expect.objectContaining({ reservation_id: b, status: 'ACTIVE', held: usd(50) }),
    ]);
    expect(rest.body.has_more).toBe(false);
  });

  it('expires a parent and its children exactly, in any order the sweeper finds them', async () => {
    const { t, id, expiresAtMs } = await parentOf(500, { grace_period_ms: 0 });
    const child = await childOf(t, id, 200);
    const grandchild = await childOf(t, child, 50);
    await api.charge(t, grandchild, { amount: usd(30) });
    await api.commit(t, await childOf(t, id, 100), { actual: usd(60) });

    clock.advanceTo(expiresAtMs + 1);
    await sweepOnce();

    for (const r of [id, child, grandchild]) {
      expectError(await api.getReservation(t, r), 410, 'RESERVATION_EXPIRED');
    }
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 90, 0, 0, 9_910),
      'workspace:w': L(1_000, 90, 0, 0, 910),
    });
  });

  it('keeps every ledger exact when a parent expires while its children commit', async () => {
    const { t, id, expiresAtMs } = await parentOf(800, { grace_period_ms: 0 });
    const children = await Promise.all([1, 2, 3, 4].map(() => childOf(t, id, 100)));
    clock.advanceTo(expiresAtMs - 1);

    const commits = children.map((c) => api.commit(t, c, { actual: usd(40) }));
    clock.advanceTo(expiresAtMs + 1);
    const [answers] = await Promise.all([Promise.all(commits), sweepOnce()]);

    const committed = answers.filter((a) => a.status === 200).length;
    for (const a of answers) expect([200, 410]).toContain(a.status);
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 40 * committed, 0, 0, 10_000 - 40 * committed),
      'workspace:w': L(1_000, 40 * committed, 0, 0, 1_000 - 40 * committed),
    });
    expectError(await api.getReservation(t, id), 410, 'RESERVATION_EXPIRED');
  });
});
