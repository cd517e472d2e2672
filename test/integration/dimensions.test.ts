import { describe, expect, it } from 'vitest';
import { L, ledgers } from '../helpers/balances.js';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import { givenBudget, givenTenantWith, usd } from '../helpers/fixtures.js';
import { request } from '../helpers/http.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// Dimensions are opt-in budget levels per key (docs/decisions.md, "Dimensions"): a key becomes
// a level for a tenant once a budget of it names the key; every other key is a tag. Server time
// moves forward past the bound within which a new budgeted key takes effect.
const clock = testClock();
const stack = useTestStack({ clock });
const { reserve, getReservation } = reservationsApi(stack);

describe('dimensions', () => {
  it('are tags while no budget names their key: accepted with any value, echoed, never scopes', async () => {
    const t = await givenTenantWith(stack, { '': 10_000, 'workspace:w': 10_000 });
    const dimensions = { session: '9b1c…-agent:main:main', user: 'ada@example.com', run_id: 'r 1' };

    const res = await reserve(t, { subject: { workspace: 'w', dimensions }, estimate: usd(100) });
    const got = await getReservation(t, res.body.reservation_id);

    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.scope_path).toBe(`tenant:${t.tenant}/workspace:w`);
    expect(res.body.affected_scopes).toHaveLength(2);
    expect(got.body.subject).toEqual({ workspace: 'w', dimensions });
    expect(await ledgers(stack, t)).toEqual({
      '': L(10_000, 0, 100, 0, 9_900),
      'workspace:w': L(10_000, 0, 100, 0, 9_900),
    });
  });

  it('become a budget level once a budget names the key: every value then needs a budget', async () => {
    const t = await givenTenantWith(stack, { '': 10_000 });
    // Seen as a tag first (and cached as such by this process).
    expect(
      (await reserve(t, { subject: { tenant: t.tenant, dimensions: { run: 'r1' } } })).status,
    ).toBe(200);

    await givenBudget(stack, t, 'dimensions:run=r1', 500);
    clock.advance(5_000);

    const held = await reserve(t, {
      subject: { tenant: t.tenant, dimensions: { run: 'r1', session: 'any:thing' } },
      estimate: usd(200),
    });
    const other = await reserve(t, { subject: { tenant: t.tenant, dimensions: { run: 'r2' } } });
    const badValue = await reserve(t, {
      subject: { tenant: t.tenant, dimensions: { run: 'a:b' } },
    });

    expect(held.status, JSON.stringify(held.body)).toBe(200);
    expect(held.body.scope_path).toBe(`tenant:${t.tenant}/dimensions:run=r1`);
    expectError(other, 409, 'BUDGET_EXCEEDED');
    expectError(badValue, 400, 'INVALID_REQUEST');
    expect((await ledgers(stack, t))['dimensions:run=r1']).toEqual(L(500, 0, 200, 0, 300));
  });

  it('refuses a tag value over 256 characters with 400', async () => {
    const t = await givenTenantWith(stack, { '': 10_000 });
    const res = await request('POST', `${stack.runtimeUrl}/v1/reservations`, {
      headers: t.headers,
      body: {
        idempotency_key: 'long-tag',
        subject: { tenant: t.tenant, dimensions: { note: 'x'.repeat(257) } },
        action: { kind: 'llm', name: 'm' },
        estimate: usd(1),
      },
    });
    expectError(res, 400, 'INVALID_REQUEST');
  });
});
