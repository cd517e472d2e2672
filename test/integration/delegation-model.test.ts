import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { amountOf, balancesOf, relativeScope } from '../helpers/balances.js';
import { testClock } from '../helpers/clock.js';
import { adminHeaders, type GivenTenant, givenTenant, scopeOf, usd } from '../helpers/fixtures.js';
import { errorOf, type Json, type Response, request } from '../helpers/http.js';
import { assertModel } from '../helpers/model.js';
import { useTestStack } from '../helpers/scaffold.js';

// Issue 29, point 5: delegation trees (docs/decisions.md § Delegations) against a model written
// from the rules — delegations (with and without a deeper level), charges, commits, releases
// (cascading), extends (capped by the parent), expiries (lazy and swept) — on unsharded,
// sharded and DAILY budgets, every ledger and answer compared after each step; then trees
// built and settled by concurrent clients while the sweeper runs, every ledger audited exactly
// against what the answers say was spent. Server time stands still until a step moves it.
const clock = testClock({ frozen: true });
const stack = useTestStack({ clock });

let sweepOnce: () => Promise<unknown>;
beforeAll(async () => {
  sweepOnce = (await import('../../functions/jobs/expire-reservations.js')).sweepOnce;
});

const ROOT_SCOPES = ['', 'workspace:w'];
const AGENT = 'workspace:w/agent:a';
const MAX_DEPTH = 4;
const MAX_CHILDREN = 8;

type Policy = 'REJECT' | 'ALLOW_IF_AVAILABLE';
interface Ledger {
  allocated: number;
  spent: number;
  reserved: number;
}
const remainingOf = (l: Ledger) => l.allocated - l.spent - l.reserved;

interface Node {
  id: string;
  scopes: string[];
  /** How many of its scopes, root first, it shares with its parent (moved, not held again). */
  inherited: number;
  parent?: Node | undefined;
  children: Set<Node>;
  depth: number;
  policy: Policy;
  status: 'ACTIVE' | 'COMMITTED' | 'RELEASED' | 'EXPIRED';
  held: number;
  charged: number;
  expiresAt: number;
  grace: number;
}

class Model {
  readonly ledgers = new Map<string, Ledger>();
  readonly nodes: Node[] = [];
  now = 0;

  ledger = (s: string) => this.ledgers.get(s) as Ledger;
  due = (n: Node) => n.status === 'ACTIVE' && this.now >= n.expiresAt + n.grace;
  intoParent = (n: Node) => n.parent?.status === 'ACTIVE';

  /**
   * Its whole hold back: into an ACTIVE parent (its own scopes released), else to the pool. A
   * child already due is expired, not released: the parent's release settles it with a request
   * of its own, which expires a due reservation first (seed-independent: a child's deadline may
   * pass while its parent's has not).
   */
  giveBack(n: Node, to: 'RELEASED' | 'EXPIRED'): void {
    for (const c of [...n.children]) this.giveBack(c, this.due(c) ? 'EXPIRED' : to);
    const into = this.intoParent(n);
    n.scopes.forEach((s, i) => {
      if (!into || i >= n.inherited) this.ledger(s).reserved -= n.held;
    });
    if (into && n.parent) {
      n.parent.held += n.held;
      n.parent.children.delete(n);
    }
    n.held = 0;
    n.status = to;
  }

  /** A charge (settle false) or commit of `amount`: null when the policy refuses. */
  charge(n: Node, amount: number, settle: boolean): boolean {
    const into = this.intoParent(n);
    const parentHeld = into && n.parent ? n.parent.held : 0;
    const fromParent =
      n.policy === 'REJECT' ? 0 : Math.min(Math.max(0, amount - n.held), parentHeld);
    const plan = n.scopes.map((s, i) => {
      const inherited = into && i < n.inherited;
      const fromHold = inherited
        ? Math.min(amount, n.held + fromParent)
        : settle
          ? n.held
          : Math.min(amount, n.held);
      return { l: this.ledger(s), fromHold, overage: amount - fromHold };
    });
    // An overage is refused under REJECT, and where remaining does not cover it.
    const refused = plan.some(
      (p) => p.overage > 0 && (n.policy === 'REJECT' || remainingOf(p.l) < p.overage),
    );
    if (refused) return false;
    for (const p of plan) {
      p.l.reserved -= p.fromHold;
      p.l.spent += amount;
    }
    if (into && n.parent)
      n.parent.held += -fromParent + (settle ? Math.max(0, n.held - amount) : 0);
    n.held = settle ? 0 : n.held - Math.min(n.held, amount);
    n.charged += amount;
    if (settle) {
      n.status = 'COMMITTED';
      if (into) n.parent?.children.delete(n);
    }
    return true;
  }

  /** Past its deadline, the request expires it (and its children) first, then answers 410. */
  expireDue(n: Node): boolean {
    if (!this.due(n)) return false;
    this.giveBack(n, 'EXPIRED');
    return true;
  }
}

const operation = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('reserve' as const),
      estimate: fc.integer({ min: 50, max: 500 }),
      policy: fc.constantFrom<Policy>('REJECT', 'ALLOW_IF_AVAILABLE'),
      ttl: fc.integer({ min: 1_000, max: 30_000 }),
      grace: fc.constantFrom(0, 2_000),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant('delegate' as const),
      pick: fc.nat(),
      amount: fc.integer({ min: 1, max: 300 }),
      ttl: fc.option(fc.integer({ min: 1_000, max: 40_000 })),
      agent: fc.boolean(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('charge' as const),
      pick: fc.nat(),
      amount: fc.integer({ min: 1, max: 200 }),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('commit' as const),
      pick: fc.nat(),
      extra: fc.integer({ min: 0, max: 300 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('release' as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('extend' as const),
      pick: fc.nat(),
      by: fc.integer({ min: 1, max: 30_000 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('advance' as const),
      ms: fc.integer({ min: 0, max: 15_000 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('sweep' as const) }) },
);
type Operation = typeof operation extends fc.Arbitrary<infer O> ? O : never;
const layout = fc.constantFrom('single' as const, 'sharded' as const, 'daily' as const);
const scenario = fc.record({
  layouts: fc.tuple(layout, layout, layout),
  agentAllocated: fc.integer({ min: 100, max: 3_000 }),
  operations: fc.array(operation, { minLength: 15, maxLength: 35 }),
});
type Scenario = typeof scenario extends fc.Arbitrary<infer S> ? S : never;

/** Periods stay put: a run takes minutes of server time, never across a UTC midnight. */
function awayFromMidnight(): void {
  const intoDay = clock.now() % 86_400_000;
  if (intoDay > 86_400_000 - 3_600_000) clock.advance(86_400_000 - intoDay + 1_000);
}

/** USD budgets by relative scope, each unsharded, in 3 shards, or rolling DAILY. */
async function givenLayouts(
  t: GivenTenant,
  budgets: readonly (readonly [string, number])[],
  layouts: Scenario['layouts'],
): Promise<void> {
  for (const [i, [scope, allocated]] of budgets.entries()) {
    const res = await request('POST', `${stack.adminUrl}/v1/admin/budgets`, {
      headers: adminHeaders,
      body: {
        scope: scopeOf(t, scope),
        unit: 'USD_MICROCENTS',
        allocated: usd(allocated),
        ...(layouts[i] === 'sharded' && { shards: 3 }),
        ...(layouts[i] === 'daily' && { period: 'DAILY' }),
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
}

interface Run {
  readonly t: GivenTenant;
  readonly model: Model;
  readonly story: string[];
}

async function expectLedgers({ t, model, story }: Run): Promise<void> {
  const actual: Record<string, unknown> = {};
  for (const b of (await balancesOf(stack, t)).values()) {
    const l = { allocated: amountOf(b.allocated), spent: amountOf(b.spent) };
    actual[relativeScope(t, String(b.scope_path))] = {
      ...l,
      reserved: amountOf(b.reserved),
      remaining: amountOf(b.remaining),
    };
  }
  const want: Record<string, unknown> = {};
  for (const [s, l] of model.ledgers) want[s] = { ...l, remaining: remainingOf(l) };
  expect(actual, story.join('\n')).toEqual(want);
}

function expectAnswer(run: Run, res: Response, want: number | string): boolean {
  const got = res.status < 300 ? res.status : `${res.status} ${errorOf(res).error}`;
  run.story.push(`  → ${JSON.stringify(got)}; model ${want}`);
  expect(got, run.story.join('\n')).toBe(want);
  return res.status < 300;
}

const post = (run: Run, path: string, body: Json) =>
  request('POST', `${stack.runtimeUrl}${path}`, {
    headers: run.t.headers,
    body: { idempotency_key: randomUUID(), ...body },
  });

/** SPEC's transition for a settle of `n`: the refusal the server answers first, if any. */
function refusalOf(m: Model, n: Node): string | undefined {
  if (n.status === 'EXPIRED') return '410 RESERVATION_EXPIRED';
  if (n.status !== 'ACTIVE') return '409 RESERVATION_FINALIZED';
  return m.expireDue(n) ? '410 RESERVATION_EXPIRED' : undefined;
}

async function step(run: Run, o: Operation): Promise<void> {
  const m = run.model;
  const n = 'pick' in o ? m.nodes[o.pick % Math.max(1, m.nodes.length)] : undefined;
  if ('pick' in o && !n) return;
  const path = n && `/v1/reservations/${n.id}`;
  switch (o.op) {
    case 'reserve': {
      const res = await post(run, '/v1/reservations', {
        subject: { workspace: 'w' },
        action: { kind: 'agent.run', name: 'orchestrator' },
        estimate: usd(o.estimate),
        overage_policy: o.policy,
        ttl_ms: o.ttl,
        grace_period_ms: o.grace,
      });
      if (!expectAnswer(run, res, 200)) return;
      for (const s of ROOT_SCOPES) m.ledger(s).reserved += o.estimate;
      m.nodes.push({
        id: String(res.body.reservation_id),
        scopes: [...ROOT_SCOPES],
        inherited: 0,
        children: new Set(),
        depth: 0,
        policy: o.policy,
        status: 'ACTIVE',
        held: o.estimate,
        charged: 0,
        expiresAt: m.now + o.ttl,
        grace: o.grace,
      });
      return;
    }
    case 'delegate': {
      if (!n) return;
      // A level not deeper than the parent's path is refused before anything is read.
      const agent = o.agent && !n.scopes.includes(AGENT);
      const res = await post(run, `${path}/delegations`, {
        amount: usd(o.amount),
        ...(o.ttl !== null && { ttl_ms: o.ttl }),
        ...(agent && { subject: { agent: 'a' } }),
      });
      const refused =
        refusalOf(m, n) ??
        (m.now >= n.expiresAt ? '410 RESERVATION_EXPIRED' : undefined) ??
        (n.depth >= MAX_DEPTH ? '400 INVALID_REQUEST' : undefined) ??
        (n.children.size >= MAX_CHILDREN ? '409 DELEGATIONS_ACTIVE' : undefined) ??
        (o.amount > n.held ? '409 BUDGET_EXCEEDED' : undefined) ??
        (agent && remainingOf(m.ledger(AGENT)) < o.amount ? '409 BUDGET_EXCEEDED' : undefined);
      if (!expectAnswer(run, res, refused ?? 200)) return;
      if (agent) m.ledger(AGENT).reserved += o.amount;
      n.held -= o.amount;
      const child: Node = {
        id: String(res.body.reservation_id),
        scopes: agent ? [...n.scopes, AGENT] : [...n.scopes],
        inherited: n.scopes.length,
        parent: n,
        children: new Set(),
        depth: n.depth + 1,
        policy: n.policy,
        status: 'ACTIVE',
        held: o.amount,
        charged: 0,
        expiresAt: Math.min(m.now + (o.ttl ?? n.expiresAt - m.now), n.expiresAt),
        grace: n.grace,
      };
      expect(res.body.expires_at_ms, run.story.join('\n')).toBe(child.expiresAt);
      n.children.add(child);
      m.nodes.push(child);
      return;
    }
    case 'charge': {
      if (!n) return;
      const res = await post(run, `${path}/charges`, { amount: usd(o.amount) });
      const refused = refusalOf(m, n);
      if (refused) return void expectAnswer(run, res, refused);
      expectAnswer(run, res, m.charge(n, o.amount, false) ? 200 : '409 BUDGET_EXCEEDED');
      return;
    }
    case 'commit': {
      if (!n) return;
      const actual = n.charged + o.extra;
      const res = await post(run, `${path}/commit`, { actual: usd(actual) });
      const refused =
        refusalOf(m, n) ?? (n.children.size > 0 ? '409 DELEGATIONS_ACTIVE' : undefined);
      if (refused) return void expectAnswer(run, res, refused);
      expectAnswer(run, res, m.charge(n, o.extra, true) ? 200 : '409 BUDGET_EXCEEDED');
      return;
    }
    case 'release': {
      if (!n) return;
      const res = await post(run, `${path}/release`, {});
      const refused = refusalOf(m, n);
      if (refused) return void expectAnswer(run, res, refused);
      m.giveBack(n, 'RELEASED');
      expectAnswer(run, res, 200);
      return;
    }
    case 'extend': {
      if (!n) return;
      const res = await post(run, `${path}/extend`, { extend_by_ms: o.by });
      const refused =
        refusalOf(m, n) ?? (m.now >= n.expiresAt ? '410 RESERVATION_EXPIRED' : undefined);
      if (!expectAnswer(run, res, refused ?? 200)) return;
      const wanted = n.expiresAt + o.by;
      n.expiresAt =
        n.parent?.status === 'ACTIVE'
          ? Math.max(n.expiresAt, Math.min(wanted, n.parent.expiresAt))
          : wanted;
      expect(res.body.expires_at_ms, run.story.join('\n')).toBe(n.expiresAt);
      return;
    }
    case 'advance':
      clock.advance(o.ms);
      m.now += o.ms;
      return;
    case 'sweep':
      await sweepOnce();
      // Parents come before their children: each takes its subtree (a child is due no later).
      for (const x of m.nodes) if (m.due(x)) m.giveBack(x, 'EXPIRED');
      return;
  }
}

async function runScenario({ layouts, agentAllocated, operations }: Scenario): Promise<void> {
  awayFromMidnight();
  const t = await givenTenant(stack);
  const model = new Model();
  model.now = clock.now();
  const run: Run = { t, model, story: [`tenant ${t.tenant}`] };
  const budgets: [string, number][] = [
    ['', 1_000_000],
    ['workspace:w', 100_000],
    [AGENT, agentAllocated],
  ];
  await givenLayouts(t, budgets, layouts);
  for (const [i, [scope, allocated]] of budgets.entries()) {
    model.ledgers.set(scope, { allocated, spent: 0, reserved: 0 });
    run.story.push(`budget '${scope}' ${allocated} ${layouts[i]}`);
  }
  for (const o of operations) {
    run.story.push(JSON.stringify(o));
    await step(run, o);
    await expectLedgers(run);
  }
  // Every hold as the model has it.
  for (const n of model.nodes) {
    const res = await request('GET', `${stack.runtimeUrl}/v1/reservations/${n.id}/charges`, {
      headers: t.headers,
    });
    // A due reservation nobody touched stays ACTIVE in its record until a sweep or a request.
    const want = [n.status, n.status === 'ACTIVE' ? n.held : 0];
    const got = [res.body.status, amountOf(res.body.held)];
    expect(got, `${run.story.join('\n')}\n${n.id}`).toEqual(want);
  }
}

/** A small seeded generator: a run's random choices replay from its seed. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return { next, int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)) };
}

/**
 * Concurrent clients each build a tree (a root, children, grandchildren, some under a deeper
 * agent level) and settle it in a random order — commits with overage, charges, releases, or
 * nothing (left to expire) — while server time moves and the sweeper runs. Afterwards every
 * ledger must hold exactly what the answers say was spent, and nothing reserved.
 */
async function runRace({ seed, layouts }: { seed: number; layouts: Scenario['layouts'] }) {
  awayFromMidnight();
  const rnd = random(seed);
  const t = await givenTenant(stack);
  const allocations: [string, number][] = [
    ['', 10_000_000],
    ['workspace:w', 1_000_000],
    [AGENT, 20_000],
  ];
  await givenLayouts(t, allocations, layouts);
  const run: Run = { t, model: new Model(), story: [`race seed ${seed} ${layouts.join(',')}`] };
  const spent = new Map<string, number>();
  const scopesOf = new Map<string, string[]>();

  async function settle(id: string, held: number, hasAgent: boolean): Promise<void> {
    const choice = rnd.int(0, 4);
    if (choice === 0) return; // left to expire
    if (choice === 1) {
      const res = await post(run, `/v1/reservations/${id}/release`, {});
      run.story.push(`release ${id} → ${res.status}`);
      return;
    }
    if (choice === 2) {
      const amount = rnd.int(1, Math.max(1, held));
      const res = await post(run, `/v1/reservations/${id}/charges`, { amount: usd(amount) });
      run.story.push(`charge ${id} ${amount} → ${res.status}`);
      if (res.status === 200) spent.set(id, (spent.get(id) ?? 0) + amount);
    }
    const actual = (spent.get(id) ?? 0) + rnd.int(0, Math.ceil(held * (hasAgent ? 1 : 1.5)));
    const res = await post(run, `/v1/reservations/${id}/commit`, { actual: usd(actual) });
    run.story.push(
      `commit ${id} ${actual} → ${res.status} ${JSON.stringify(res.body.error ?? '')}`,
    );
    if (res.status === 200) spent.set(id, actual);
    // Children still ACTIVE: release the parent instead, and them with it.
    if (res.status === 409 && errorOf(res).error === 'DELEGATIONS_ACTIVE') {
      const released = await post(run, `/v1/reservations/${id}/release`, {});
      run.story.push(`release ${id} (cascade) → ${released.status}`);
    }
  }

  async function tree(depth: number, parentId: string, parentScopes: string[], held: number) {
    const children = depth >= 3 ? 0 : rnd.int(0, 3);
    const made: { id: string; held: number; agent: boolean }[] = [];
    let left = held;
    for (let i = 0; i < children && left > 1; i++) {
      const amount = rnd.int(1, Math.floor(left / 2));
      const agent = !parentScopes.includes(AGENT) && rnd.next() < 0.4;
      const res = await post(run, `/v1/reservations/${parentId}/delegations`, {
        amount: usd(amount),
        ...(rnd.next() < 0.5 && { ttl_ms: rnd.int(1_000, 30_000) }),
        ...(agent && { subject: { agent: 'a' } }),
      });
      run.story.push(`delegate ${parentId} ${amount} → ${res.status}`);
      if (res.status !== 200) continue;
      const id = String(res.body.reservation_id);
      const scopes = agent ? [...parentScopes, AGENT] : parentScopes;
      scopesOf.set(id, scopes);
      left -= amount;
      made.push({ id, held: amount, agent: scopes.includes(AGENT) });
      await tree(depth + 1, id, scopes, amount);
    }
    // Children settle concurrently, in a random order.
    await Promise.all(made.map((c) => settle(c.id, c.held, c.agent)));
  }

  async function client(): Promise<void> {
    const estimate = rnd.int(500, 5_000);
    const res = await post(run, '/v1/reservations', {
      subject: { workspace: 'w' },
      action: { kind: 'agent.run', name: 'orchestrator' },
      estimate: usd(estimate),
      overage_policy: rnd.next() < 0.5 ? 'REJECT' : 'ALLOW_IF_AVAILABLE',
      ttl_ms: rnd.int(20_000, 120_000),
      grace_period_ms: 0,
    });
    if (res.status !== 200) return;
    const id = String(res.body.reservation_id);
    scopesOf.set(id, [...ROOT_SCOPES]);
    await tree(1, id, ROOT_SCOPES, estimate);
    await settle(id, estimate, false);
  }

  let racing = true;
  const time = (async () => {
    while (racing) {
      clock.advance(rnd.int(0, 1_500));
      await sweepOnce();
    }
  })();
  await Promise.all([client(), client(), client(), client()]);
  racing = false;
  await time;
  clock.advance(200_000);
  await sweepOnce();

  const want: Record<string, unknown> = {};
  for (const [scope, allocated] of allocations) {
    let total = 0;
    for (const [id, scopes] of scopesOf) if (scopes.includes(scope)) total += spent.get(id) ?? 0;
    want[scope] = { allocated, spent: total, reserved: 0, remaining: allocated - total };
  }
  const got: Record<string, unknown> = {};
  for (const b of (await balancesOf(stack, t)).values()) {
    got[relativeScope(t, String(b.scope_path))] = {
      allocated: amountOf(b.allocated),
      spent: amountOf(b.spent),
      reserved: amountOf(b.reserved),
      remaining: amountOf(b.remaining),
    };
  }
  expect(got, run.story.join('\n')).toEqual(want);
}

describe('delegation trees, against a model', () => {
  it('keeps every ledger and answer equal to the model through random trees of delegations, charges, commits, releases, extends and expiries', async () => {
    await assertModel('delegation model', scenario, runScenario, 6);
  });

  it('audits every ledger exactly after concurrent clients build and settle trees while the sweeper runs', async () => {
    const race = fc.record({ seed: fc.nat(), layouts: fc.tuple(layout, layout, layout) });
    await assertModel('delegation race', race, runRace, 4);
  });
});
