import { describe, expect, it } from 'vitest';
import { expectError } from '../helpers/errors.js';
import {
  adminHeaders,
  type GivenTenant,
  givenBudget,
  givenTenant,
  reserveBody,
  scopeOf,
  usd,
} from '../helpers/fixtures.js';
import { type Json, type Response, request } from '../helpers/http.js';
import { useTestStack } from '../helpers/scaffold.js';

// A sharded budget at its edge answers what the unsharded one answers (docs/scaling.md § At
// the edges): 100 reserves at once on a budget whose remaining binds at exactly K holds end with
// K holds and 100 − K refusals 409 BUDGET_EXCEEDED — no 5xx, no 429, no hold granted after a
// failure — and every read during the burst is one instant of the budget: its allocation the
// funded amount, its holds whole, never more than K of them. DynamoDB Local, as the attack
// harness runs it; the same burst under the contention emulator is measured, not asserted
// (docs/scaling.md).
const stack = useTestStack();

const K = 7;
const HOLD = 1_000;
/** Short of one more hold. */
const REST = 431;
const FUNDED = K * HOLD + REST;
const BURST = 100;

const budgetPath = (t: GivenTenant, rel: string) =>
  `scope=${encodeURIComponent(scopeOf(t, rel))}&unit=USD_MICROCENTS`;

/** Every view of the budget at `rel`: balances (runtime), the lookup and the listing (admin). */
async function readsOf(t: GivenTenant, rel: string): Promise<Json[]> {
  const [balances, lookup, listing] = await Promise.all([
    request('GET', `${stack.runtimeUrl}/v1/balances?tenant=${t.tenant}&include_children=true`, {
      headers: t.headers,
    }),
    request('GET', `${stack.adminUrl}/v1/admin/budgets/lookup?${budgetPath(t, rel)}`, {
      headers: adminHeaders,
    }),
    request('GET', `${stack.adminUrl}/v1/admin/budgets?tenant_id=${t.tenant}`, {
      headers: adminHeaders,
    }),
  ]);
  for (const r of [balances, lookup, listing]) expect(r.status, JSON.stringify(r.body)).toBe(200);
  const scope = scopeOf(t, rel);
  const of = (list: unknown) => (list as Json[]).filter((b) => b.scope === scope);
  return [...of(balances.body.balances), lookup.body, ...of(listing.body.ledgers)];
}

/** One instant of the budget: funded allocation, whole holds, at most K, invariant kept. */
function expectOneInstant(b: Json): void {
  const amount = (field: string) => Number((b[field] as Json).amount);
  const allocated = amount('allocated');
  const reserved = amount('reserved');
  const [spent, debt, remaining] = [amount('spent'), amount('debt'), amount('remaining')];
  const text = JSON.stringify(b);
  expect(allocated, text).toBe(FUNDED);
  expect([spent, debt], text).toEqual([0, 0]);
  expect(reserved % HOLD, text).toBe(0);
  expect(reserved, text).toBeLessThanOrEqual(K * HOLD);
  expect(remaining, text).toBe(allocated - reserved);
}

/**
 * BURST reserves of HOLD at once on the budget at `rel` (reads polled all along, `during`
 * sent at the start), then checks: K holds, every other answer 409 BUDGET_EXCEEDED, every
 * read one instant, the K holds found by their keys and nothing else, DENY on a dry run and a
 * decide.
 */
async function burstAtTheEdge(
  t: GivenTenant,
  rel: string,
  subject: Json,
  during?: () => Promise<Response>,
) {
  let done = false;
  const reads: Json[] = [];
  const polling = (async () => {
    while (!done) reads.push(...(await readsOf(t, rel)));
  })();
  const bodies = Array.from({ length: BURST }, () => reserveBody({ subject, estimate: usd(HOLD) }));
  const [answers, alongside] = await Promise.all([
    Promise.all(
      bodies.map((body) =>
        request('POST', `${stack.runtimeUrl}/v1/reservations`, { headers: t.headers, body }),
      ),
    ),
    during?.(),
  ]);
  done = true;
  await polling;
  reads.push(...(await readsOf(t, rel)));

  const granted = answers.filter((a) => a.status === 200);
  expect(granted, JSON.stringify(answers.map((a) => a.status))).toHaveLength(K);
  for (const a of answers) if (a.status !== 200) expectError(a, 409, 'BUDGET_EXCEEDED', 'runtime');
  for (const b of reads) expectOneInstant(b);
  expect(reads.length).toBeGreaterThan(3);
  const last = reads[reads.length - 1] as Json;
  expect((last.reserved as Json).amount).toBe(K * HOLD);
  // Only what was answered 200 holds anything: no key answered 409 left a reservation.
  const held = await Promise.all(
    bodies.map(async (body) => {
      const found = await request(
        'GET',
        `${stack.runtimeUrl}/v1/reservations?idempotency_key=${String(body.idempotency_key)}`,
        { headers: t.headers },
      );
      return (found.body.reservations as Json[]).length;
    }),
  );
  expect(held.reduce((a, n) => a + n, 0)).toBe(K);
  const evaluation = {
    subject,
    action: { kind: 'llm.completion', name: 'x' },
    estimate: usd(HOLD),
  };
  const [dryRun, decide] = await Promise.all([
    request('POST', `${stack.runtimeUrl}/v1/reservations`, {
      headers: t.headers,
      body: reserveBody({ subject, estimate: usd(HOLD), dry_run: true }),
    }),
    request('POST', `${stack.runtimeUrl}/v1/decide`, {
      headers: t.headers,
      body: { idempotency_key: `d-${t.tenant}`, ...evaluation },
    }),
  ]);
  expect([dryRun.body.decision, dryRun.body.reason_code]).toEqual(['DENY', 'BUDGET_EXCEEDED']);
  expect([decide.body.decision, decide.body.reason_code]).toEqual(['DENY', 'BUDGET_EXCEEDED']);
  return alongside;
}

describe('a sharded budget at its edge, 100 reserves at once binding at 7 holds', () => {
  for (const shards of [4, 16, 64]) {
    it(`holds exactly 7 on ${shards} shards at the tenant level, refuses the rest 409, and reads whole`, async () => {
      const t = await givenTenant(stack);
      await givenBudget(stack, t, '', FUNDED, { shards });

      await burstAtTheEdge(t, '', { tenant: t.tenant });
    });
  }

  it('does the same for a workspace budget of 16 shards under an unsharded root', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 100_000_000);
    await givenBudget(stack, t, 'workspace:w', FUNDED, { shards: 16 });

    await burstAtTheEdge(t, 'workspace:w', { workspace: 'w' });
  });

  it('does the same while the budget grows from 4 shards to 16 under it', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', FUNDED, { shards: 4 });

    const grown = await burstAtTheEdge(t, '', { tenant: t.tenant }, () =>
      request('PATCH', `${stack.adminUrl}/v1/admin/budgets?${budgetPath(t, '')}`, {
        headers: adminHeaders,
        body: { shards: 16 },
      }),
    );

    expect([grown?.status, grown?.body.shards]).toEqual([200, 16]);
  });
});
