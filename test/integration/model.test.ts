import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { amountOf, balancesOf, relativeScope } from '../helpers/balances.js';
import { fund, type GivenTenant, givenBudget, givenTenant, usd } from '../helpers/fixtures.js';
import { errorOf, type Json, type Response, request } from '../helpers/http.js';
import { assertModel } from '../helpers/model.js';
import { withoutLease } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

const stack = useTestStack();

// ---- the model: SPEC's ledger rules, written from the SPEC, not from the service ------------

type Policy = 'REJECT' | 'ALLOW_IF_AVAILABLE' | 'ALLOW_WITH_OVERDRAFT';
type Refusal = 'OVERDRAFT_LIMIT_EXCEEDED' | 'DEBT_OUTSTANDING' | 'BUDGET_EXCEEDED';

interface ModelLedger {
  allocated: number;
  spent: number;
  reserved: number;
  debt: number;
  limit: number;
}

interface ModelReservation {
  readonly id: string;
  readonly scopes: readonly string[];
  readonly estimate: number;
  readonly policy: Policy;
  status: 'ACTIVE' | 'COMMITTED' | 'RELEASED';
  expiresAtMs: number;
  /** The creation request and its answer, for replays. */
  readonly body: Json;
  readonly response: Json;
}

/** remaining = allocated − spent − reserved − debt (may go negative through overdraft). */
const remainingOf = (l: ModelLedger) => l.allocated - l.spent - l.reserved - l.debt;

/** SPEC § Errors: OVERDRAFT_LIMIT_EXCEEDED > DEBT_OUTSTANDING > BUDGET_EXCEEDED. */
const PRECEDENCE: readonly Refusal[] = [
  'OVERDRAFT_LIMIT_EXCEEDED',
  'DEBT_OUTSTANDING',
  'BUDGET_EXCEEDED',
];
const strongest = (codes: readonly (Refusal | undefined)[]): Refusal | undefined =>
  PRECEDENCE.find((code) => codes.includes(code));

class Model {
  readonly ledgers = new Map<string, ModelLedger>();
  /** The dimension keys some budget names: levels; every other key is a tag. */
  readonly dimensionKeys = new Set<string>();
  readonly reservations: ModelReservation[] = [];

  /** SPEC core behaviour 2 and 6, scope blocking rules 1-2. */
  admit(scopes: readonly string[], estimate: number): Refusal | undefined {
    return strongest(
      scopes.map((s): Refusal | undefined => {
        const l = this.ledgers.get(s);
        if (!l) return 'BUDGET_EXCEEDED';
        if (l.debt > l.limit) return 'OVERDRAFT_LIMIT_EXCEEDED';
        if (l.debt > 0) return 'DEBT_OUTSTANDING';
        return remainingOf(l) < estimate ? 'BUDGET_EXCEEDED' : undefined;
      }),
    );
  }

  /**
   * Charges `actual` against `held` on every scope or none (SPEC § Overage policy). The overage
   * is paid from remaining where it covers it; under ALLOW_WITH_OVERDRAFT the uncovered part
   * becomes debt, refused when debt + uncovered part > overdraft_limit.
   */
  charge(
    scopes: readonly string[],
    held: number,
    actual: number,
    policy: Policy,
  ): Refusal | undefined {
    const overage = actual - held;
    const plans = scopes.map((s) => {
      const l = this.ledgers.get(s);
      if (!l) return { refusal: 'BUDGET_EXCEEDED' as const };
      if (overage <= 0) return { l, spent: actual, debt: 0 };
      const covered = Math.min(overage, Math.max(0, remainingOf(l)));
      const uncovered = overage - covered;
      if (uncovered === 0 && policy !== 'REJECT') return { l, spent: actual, debt: 0 };
      if (policy !== 'ALLOW_WITH_OVERDRAFT') return { refusal: 'BUDGET_EXCEEDED' as const };
      if (l.debt + uncovered > l.limit) return { refusal: 'OVERDRAFT_LIMIT_EXCEEDED' as const };
      return { l, spent: held + covered, debt: uncovered };
    });
    const refusal = strongest(plans.map((p) => ('refusal' in p ? p.refusal : undefined)));
    if (refusal) return refusal;
    for (const p of plans) {
      if ('refusal' in p) continue;
      p.l.reserved -= held;
      p.l.spent += p.spent;
      p.l.debt += p.debt;
    }
    return undefined;
  }

  fund(scope: string, operation: 'CREDIT' | 'RESET' | 'REPAY_DEBT', amount: number): void {
    const l = this.ledgers.get(scope);
    if (!l) throw new Error(`no ledger ${scope}`);
    if (operation === 'CREDIT') l.allocated += amount;
    if (operation === 'RESET') l.allocated = amount;
    if (operation === 'REPAY_DEBT') {
      const repaid = Math.min(l.debt, amount);
      l.debt -= repaid;
      l.allocated += amount - repaid; // the excess is credited to the allocation
    }
  }
}

// ---- subjects and their scopes (derived here, independently of the service) ----------------

const LEVELS = ['workspace', 'app', 'workflow', 'agent', 'toolset'] as const;

interface SubjectSpec {
  readonly withTenant?: boolean;
  readonly workspace?: string;
  readonly app?: string;
  readonly workflow?: string;
  readonly agent?: string;
  readonly toolset?: string;
  readonly dimensions?: Record<string, string>;
}

const SUBJECTS: readonly SubjectSpec[] = [
  { workspace: 'w1' },
  { workspace: 'w1', app: 'a1' },
  { workspace: 'w2' },
  { withTenant: true, workspace: 'w1', app: 'a1', dimensions: { env: 'prod' } },
  { app: 'a1' },
  { workspace: 'w2', agent: 'g1', dimensions: { b: '2', a: '1' } },
  { withTenant: true },
  { workspace: 'w1', workflow: 'f1', toolset: 't1' },
];

/**
 * Scopes relative to the tenant root ('' is the root), root first. A dimension is a level only
 * when a budget of the tenant names its key (`budgeted`; all keys when undefined): otherwise a tag.
 */
function scopesOf(s: SubjectSpec, budgeted?: ReadonlySet<string>): string[] {
  const segments: string[] = [];
  for (const level of LEVELS) if (s[level] !== undefined) segments.push(`${level}:${s[level]}`);
  for (const key of Object.keys(s.dimensions ?? {}).sort()) {
    if (budgeted && !budgeted.has(key)) continue;
    segments.push(`dimensions:${key}=${s.dimensions?.[key]}`);
  }
  return ['', ...segments.map((_, i) => segments.slice(0, i + 1).join('/'))];
}

function subjectBody(t: GivenTenant, s: SubjectSpec): Json {
  const { withTenant, ...fields } = s;
  return { ...(withTenant && { tenant: t.tenant }), ...fields };
}

/** A reservation or event body for the subject, with a fresh key and the policy unless 'default'. */
function bodyFor(t: GivenTenant, s: SubjectSpec, policy: Policy | 'default', fields: Json): Json {
  return {
    idempotency_key: randomUUID(),
    subject: subjectBody(t, s),
    ...fields,
    ...(policy !== 'default' && { overage_policy: policy }),
  };
}

const UNIVERSE = [...new Set(SUBJECTS.flatMap((s) => scopesOf(s)))];

// ---- the scenario ----------------------------------------------------------------------------

const policy = fc.constantFrom<Policy | 'default'>(
  'default',
  'REJECT',
  'ALLOW_IF_AVAILABLE',
  'ALLOW_WITH_OVERDRAFT',
);
const subjectIndex = fc.nat({ max: SUBJECTS.length - 1 });

const operation = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('reserve' as const),
      subject: subjectIndex,
      estimate: fc.nat({ max: 1_500 }),
      policy,
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('commit' as const),
      pick: fc.nat(),
      actual: fc.nat({ max: 2_500 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('release' as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('extend' as const),
      pick: fc.nat(),
      by: fc.integer({ min: 1, max: 60_000 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('event' as const),
      subject: subjectIndex,
      actual: fc.nat({ max: 1_500 }),
      policy,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('fund' as const),
      scope: fc.nat({ max: UNIVERSE.length - 1 }),
      operation: fc.constantFrom('CREDIT' as const, 'RESET' as const, 'REPAY_DEBT' as const),
      amount: fc.nat({ max: 2_000 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('replay' as const), pick: fc.nat() }) },
);
type Operation = typeof operation extends fc.Arbitrary<infer O> ? O : never;

// Half the budgets are split into escrow shards (docs/scaling.md): the model knows nothing of
// shards, so every answer and balance must be the same either way.
const budget = fc.option(
  fc.record({
    allocated: fc.nat({ max: 3_000 }),
    limit: fc.nat({ max: 1_500 }),
    shards: fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 6 })),
  }),
  { freq: 5 },
);

const scenario = fc.record({
  budgets: fc.tuple(...UNIVERSE.map(() => budget)),
  operations: fc.array(operation, { minLength: 10, maxLength: 25 }),
});

// ---- running a scenario over HTTP ------------------------------------------------------------

const url = (path: string) => `${stack.runtimeUrl}${path}`;

interface Observed {
  allocated: number;
  spent: number;
  reserved: number;
  debt: number;
  remaining: number;
  overdraft_limit: number;
  is_over_limit: boolean;
}

const observed = (b: Json): Observed => ({
  allocated: amountOf(b.allocated),
  spent: amountOf(b.spent),
  reserved: amountOf(b.reserved),
  debt: amountOf(b.debt),
  remaining: amountOf(b.remaining),
  overdraft_limit: amountOf(b.overdraft_limit),
  is_over_limit: Boolean(b.is_over_limit),
});

const expectedOf = (l: ModelLedger): Observed => ({
  allocated: l.allocated,
  spent: l.spent,
  reserved: l.reserved,
  debt: l.debt,
  remaining: remainingOf(l),
  overdraft_limit: l.limit,
  is_over_limit: l.debt > l.limit,
});

/** Every ledger the service holds equals the model's, and there are no others. */
async function expectLedgersMatch(t: GivenTenant, model: Model, story: string[]): Promise<void> {
  const actual: Record<string, Observed> = {};
  for (const b of (await balancesOf(stack, t)).values()) {
    actual[relativeScope(t, String(b.scope_path))] = observed(b);
  }
  const expected: Record<string, Observed> = {};
  for (const [scope, l] of model.ledgers) expected[scope] = expectedOf(l);
  expect(actual, story.join('\n')).toEqual(expected);
}

/** Balances in a success response are the ledgers after the operation. */
function expectResponseBalances(t: GivenTenant, body: Json, model: Model, story: string[]): void {
  for (const b of (body.balances as Json[] | undefined) ?? []) {
    const l = model.ledgers.get(relativeScope(t, String(b.scope_path)));
    expect(l && observed(b), story.join('\n')).toEqual(l && expectedOf(l));
  }
}

function expectOutcome(res: Response, status: number, code: string | undefined, story: string[]) {
  const got = res.status < 300 ? res.status : `${res.status} ${errorOf(res).error}`;
  expect(got, story.join('\n')).toBe(code ? `${status} ${code}` : status);
}

const STATUS: Record<Refusal | 'RESERVATION_FINALIZED', number> = {
  OVERDRAFT_LIMIT_EXCEEDED: 409,
  DEBT_OUTSTANDING: 409,
  BUDGET_EXCEEDED: 409,
  RESERVATION_FINALIZED: 409,
};

async function step(t: GivenTenant, model: Model, o: Operation, story: string[]): Promise<void> {
  const headers = t.headers;
  const picked = (pick: number) => model.reservations[pick % model.reservations.length];
  switch (o.op) {
    case 'reserve': {
      const spec = SUBJECTS[o.subject] as SubjectSpec;
      const scopes = scopesOf(spec, model.dimensionKeys);
      const body = bodyFor(t, spec, o.policy, {
        action: { kind: 'llm.completion', name: 'model-x' },
        estimate: usd(o.estimate),
      });
      const res = await request('POST', url('/v1/reservations'), { headers, body });
      const refusal = model.admit(scopes, o.estimate);
      story.push(
        `  → ${res.status} ${JSON.stringify(errorOf(res).error ?? '')}; model ${refusal ?? 200}`,
      );
      expectOutcome(res, refusal ? STATUS[refusal] : 200, refusal, story);
      if (refusal) return;
      for (const s of scopes) (model.ledgers.get(s) as ModelLedger).reserved += o.estimate;
      model.reservations.push({
        id: String(res.body.reservation_id),
        scopes,
        estimate: o.estimate,
        policy: o.policy === 'default' ? 'REJECT' : o.policy,
        status: 'ACTIVE',
        expiresAtMs: Number(res.body.expires_at_ms),
        body,
        response: res.body,
      });
      expectResponseBalances(t, res.body, model, story);
      return;
    }
    case 'commit':
    case 'release':
    case 'extend': {
      const r = picked(o.pick);
      if (!r) return;
      const body: Json = {
        idempotency_key: randomUUID(),
        ...(o.op === 'commit' && { actual: usd(o.actual) }),
        ...(o.op === 'extend' && { extend_by_ms: o.by }),
      };
      const res = await request('POST', url(`/v1/reservations/${r.id}/${o.op}`), { headers, body });
      story.push(`  → ${res.status} ${JSON.stringify(errorOf(res).error ?? '')} (was ${r.status})`);
      if (r.status !== 'ACTIVE') {
        expectOutcome(res, 409, 'RESERVATION_FINALIZED', story);
        return;
      }
      if (o.op === 'extend') {
        expectOutcome(res, 200, undefined, story);
        r.expiresAtMs += o.by;
        expect(res.body.expires_at_ms, story.join('\n')).toBe(r.expiresAtMs);
      } else if (o.op === 'release') {
        expectOutcome(res, 200, undefined, story);
        for (const s of r.scopes) (model.ledgers.get(s) as ModelLedger).reserved -= r.estimate;
        r.status = 'RELEASED';
        expect(res.body.released, story.join('\n')).toEqual(usd(r.estimate));
      } else {
        const refusal = model.charge(r.scopes, r.estimate, o.actual, r.policy);
        expectOutcome(res, refusal ? STATUS[refusal] : 200, refusal, story);
        if (refusal) return; // a refused commit leaves the reservation ACTIVE
        r.status = 'COMMITTED';
        expect(
          { charged: res.body.charged, released: res.body.released },
          story.join('\n'),
        ).toEqual({
          charged: usd(o.actual),
          released: usd(Math.max(0, r.estimate - o.actual)),
        });
      }
      expectResponseBalances(t, res.body, model, story);
      return;
    }
    case 'event': {
      const spec = SUBJECTS[o.subject] as SubjectSpec;
      const body = bodyFor(t, spec, o.policy, {
        action: { kind: 'tool', name: 'search' },
        actual: usd(o.actual),
      });
      const res = await request('POST', url('/v1/events'), { headers, body });
      // Nothing is held for an event: REJECT, like ALLOW_IF_AVAILABLE, charges only what
      // remaining covers ("cost not covered" → BUDGET_EXCEEDED, SPEC § Errors).
      const eventPolicy = o.policy === 'ALLOW_WITH_OVERDRAFT' ? o.policy : 'ALLOW_IF_AVAILABLE';
      const refusal = model.charge(scopesOf(spec, model.dimensionKeys), 0, o.actual, eventPolicy);
      story.push(
        `  → ${res.status} ${JSON.stringify(errorOf(res).error ?? '')}; model ${refusal ?? 201}`,
      );
      expectOutcome(res, refusal ? STATUS[refusal] : 201, refusal, story);
      if (!refusal) expectResponseBalances(t, res.body, model, story);
      return;
    }
    case 'fund': {
      const scope = UNIVERSE[o.scope] as string;
      if (!model.ledgers.has(scope)) return;
      const res = await fund(stack, t, scope, o.operation, o.amount);
      story.push(`  → ${res.status}`);
      expectOutcome(res, 200, undefined, story);
      model.fund(scope, o.operation, o.amount);
      return;
    }
    case 'replay': {
      const r = picked(o.pick);
      if (!r) return;
      const res = await request('POST', url('/v1/reservations'), { headers, body: r.body });
      story.push(`  → ${res.status}`);
      expectOutcome(res, 200, undefined, story);
      expect(withoutLease(res.body), story.join('\n')).toEqual(withoutLease(r.response));
      return;
    }
  }
}

type Scenario = typeof scenario extends fc.Arbitrary<infer S> ? S : never;

/** Builds the budgets, then runs each operation and compares every ledger after each. */
async function runScenario({ budgets, operations }: Scenario): Promise<void> {
  const t = await givenTenant(stack);
  const model = new Model();
  const story = [`tenant ${t.tenant}`];
  for (const [i, b] of budgets.entries()) {
    const scope = UNIVERSE[i] as string;
    if (!b) continue;
    await givenBudget(stack, t, scope, b.allocated, { overdraftLimit: b.limit, shards: b.shards });
    model.ledgers.set(scope, {
      allocated: b.allocated,
      spent: 0,
      reserved: 0,
      debt: 0,
      limit: b.limit,
    });
    story.push(`budget '${scope}' ${b.allocated} (limit ${b.limit}, ${b.shards} shards)`);
    for (const m of scope.matchAll(/dimensions:([^=]+)=/g)) model.dimensionKeys.add(m[1] ?? '');
  }
  await expectLedgersMatch(t, model, story);
  for (const o of operations) {
    story.push(JSON.stringify(o));
    await step(t, model, o, story);
    await expectLedgersMatch(t, model, story);
  }
}

/** Budgets for a fixed example: only the named scopes (relative) have a ledger. */
const budgetsFor = (given: Record<string, { allocated: number; limit: number; shards?: number }>) =>
  UNIVERSE.map((scope) => {
    const b = given[scope];
    return b ? { shards: 1, ...b } : null;
  }) as Scenario['budgets'];

describe('the service against an in-memory model of SPEC', () => {
  it('keeps every ledger equal to the model through random reserve, commit, release, extend, event and fund sequences', async () => {
    await assertModel('model test', scenario, runScenario, 8);
  });

  it('agrees on a fixed overdraft sequence: split commit, debt blocking, repayment', async () => {
    const w1 = SUBJECTS.findIndex((s) => s.workspace === 'w1' && Object.keys(s).length === 1);

    await runScenario({
      budgets: budgetsFor({
        '': { allocated: 10_000, limit: 0 },
        // Split 4 ways: the overdraft and the repayment rewrite every shard.
        'workspace:w1': { allocated: 1_000, limit: 500, shards: 4 },
      }),
      operations: [
        { op: 'reserve', subject: w1, estimate: 300, policy: 'ALLOW_WITH_OVERDRAFT' },
        { op: 'reserve', subject: w1, estimate: 100, policy: 'ALLOW_IF_AVAILABLE' },
        { op: 'commit', pick: 0, actual: 1_200 },
        { op: 'reserve', subject: w1, estimate: 1, policy: 'default' },
        { op: 'commit', pick: 1, actual: 101 },
        { op: 'event', subject: w1, actual: 50, policy: 'REJECT' },
        {
          op: 'fund',
          scope: UNIVERSE.indexOf('workspace:w1'),
          operation: 'REPAY_DEBT',
          amount: 400,
        },
        { op: 'reserve', subject: w1, estimate: 1, policy: 'default' },
        { op: 'release', pick: 1 },
        { op: 'replay', pick: 0 },
      ],
    });
  });

  it('refuses an event with OVERDRAFT_LIMIT_EXCEEDED over BUDGET_EXCEEDED when one scope has no ledger', async () => {
    // tenant root: 100 allocated, limit 0, so 500 under ALLOW_WITH_OVERDRAFT would leave 400
    // of debt above the limit; workspace:w2 has no ledger at all (zero allocation).
    const w2 = SUBJECTS.findIndex((s) => s.workspace === 'w2' && Object.keys(s).length === 1);

    await runScenario({
      budgets: budgetsFor({ '': { allocated: 100, limit: 0 } }),
      operations: [{ op: 'event', subject: w2, actual: 500, policy: 'ALLOW_WITH_OVERDRAFT' }],
    });
  });
});
