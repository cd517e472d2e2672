import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { amountOf, balancesOf, relativeScope } from '../helpers/balances.js';
import { testClock } from '../helpers/clock.js';
import { adminHeaders, type GivenTenant, givenTenant, scopeOf, usd } from '../helpers/fixtures.js';
import { errorOf, type Json, type Response, request } from '../helpers/http.js';
import { assertModel } from '../helpers/model.js';
import { withoutLease } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// Issue 28, point 5: settlement as agents spend — charges while a hold is open, commit, release,
// extend, expiry (lazy and swept), refunds and funding — on unsharded, sharded and rolling (DAILY)
// budgets, against one model written from the rules (docs/ledger-math.md, docs/decisions.md §
// Charges, § Refunds, § Rolling budgets), every ledger and every answer compared after each
// step. Server time stands still until an operation moves it: deadlines and period boundaries
// are crossed exactly. The sibling model.test.ts covers SPEC's operations alone.
const clock = testClock({ frozen: true });
const stack = useTestStack({ clock });
const DAY = 86_400_000;

let sweepOnce: () => Promise<unknown>;
beforeAll(async () => {
  sweepOnce = (await import('../../functions/jobs/expire-reservations.js')).sweepOnce;
});

// ---- the model ------------------------------------------------------------------------------

type Policy = 'REJECT' | 'ALLOW_IF_AVAILABLE' | 'ALLOW_WITH_OVERDRAFT';
type Code = 'OVERDRAFT_LIMIT_EXCEEDED' | 'DEBT_OUTSTANDING' | 'BUDGET_EXCEEDED';
const PRECEDENCE: readonly Code[] = [
  'OVERDRAFT_LIMIT_EXCEEDED',
  'DEBT_OUTSTANDING',
  'BUDGET_EXCEEDED',
];

interface Ledger {
  allocated: number;
  spent: number;
  reserved: number;
  debt: number;
  limit: number;
}
const remainingOf = (l: Ledger) => l.allocated - l.spent - l.reserved - l.debt;

interface Budget {
  current: Ledger;
  cap?: number | undefined;
  /** DAILY: the period of `current`, its allocation, and the closed periods by start. */
  rolling?: { start: number; amount: number; closed: Map<number, Ledger> } | undefined;
}

/** Where a charge landed: its scope, and for a rolling budget the period it was made in. */
interface Place {
  scope: string;
  periodStart?: number | undefined;
  debt: number;
}

interface Reservation {
  id: string;
  scopes: string[];
  estimate: number;
  policy: Policy;
  status: 'ACTIVE' | 'COMMITTED' | 'RELEASED' | 'EXPIRED';
  expiresAt: number;
  grace: number;
  held: number;
  charged: number;
  charges: number;
  committed?: number;
  refunded: number;
  places: Place[];
}

interface Charged {
  id: string;
  actual: number;
  refunded: number;
  places: Place[];
}

interface Refusal {
  code: Code;
  scope: string;
  cap?: boolean;
}

/** The refusal to report: over limit, then debt, then budget (a cap first), then scope order. */
function first(refusals: readonly (Refusal | undefined)[]): Refusal | undefined {
  const rank = (r: Refusal) => 2 * PRECEDENCE.indexOf(r.code) + (r.cap ? 0 : 1);
  return refusals.filter((r): r is Refusal => !!r).sort((a, b) => rank(a) - rank(b))[0];
}

class Model {
  readonly budgets = new Map<string, Budget>();
  readonly reservations: Reservation[] = [];
  readonly events: Charged[] = [];
  now = 0;

  /** A write read the budget: a rolling one past its period rolls over (debt carried on). */
  touch(scope: string): void {
    const b = this.budgets.get(scope);
    const p = b?.rolling;
    if (!b || !p || this.now < p.start + DAY) return;
    p.closed.set(p.start, { ...b.current, debt: 0 });
    p.start = Math.floor(this.now / DAY) * DAY;
    b.current = { ...b.current, allocated: p.amount, spent: 0, reserved: 0 };
  }

  /** The ledger a place settles on: its period's, closed once the budget left it. */
  ledgerAt(p: Pick<Place, 'scope' | 'periodStart'>): Ledger {
    const b = this.budgets.get(p.scope) as Budget;
    if (!b.rolling || p.periodStart === undefined || p.periodStart === b.rolling.start) {
      return b.current;
    }
    return b.rolling.closed.get(p.periodStart) as Ledger;
  }

  placeOf(scope: string): Place {
    return { scope, periodStart: this.budgets.get(scope)?.rolling?.start, debt: 0 };
  }

  admit(scopes: readonly string[], estimate: number): Refusal | undefined {
    return first(
      scopes.map((scope): Refusal | undefined => {
        const b = this.budgets.get(scope);
        if (!b) return { code: 'BUDGET_EXCEEDED', scope };
        const l = b.current;
        if (l.debt > l.limit) return { code: 'OVERDRAFT_LIMIT_EXCEEDED', scope };
        if (l.debt > 0) return { code: 'DEBT_OUTSTANDING', scope };
        if (b.cap !== undefined && estimate > b.cap)
          return { code: 'BUDGET_EXCEEDED', scope, cap: true };
        return remainingOf(l) < estimate ? { code: 'BUDGET_EXCEEDED', scope } : undefined;
      }),
    );
  }

  /** chargeLedger on every ledger or none: the debt each run up, or the refusal. */
  charge(ledgers: readonly [string, Ledger][], held: number, actual: number, policy: Policy) {
    const overage = actual - held;
    const plans = ledgers.map(([scope, l]) => {
      if (overage <= 0) return { l, spent: actual, debt: 0 };
      if (remainingOf(l) >= overage && policy !== 'REJECT') return { l, spent: actual, debt: 0 };
      if (policy !== 'ALLOW_WITH_OVERDRAFT')
        return { refusal: { code: 'BUDGET_EXCEEDED' as const, scope } };
      const funded = Math.max(0, remainingOf(l));
      const deficit = overage - funded;
      if (l.debt + deficit > l.limit) {
        return { refusal: { code: 'OVERDRAFT_LIMIT_EXCEEDED' as const, scope } };
      }
      return { l, spent: held + funded, debt: deficit };
    });
    const refusal = first(plans.map((p) => ('refusal' in p ? p.refusal : undefined)));
    if (refusal) return { refusal };
    return {
      debts: plans.map((p) => {
        if ('refusal' in p) return 0;
        p.l.reserved -= held;
        p.l.spent += p.spent;
        p.l.debt += p.debt;
        return p.debt;
      }),
    };
  }

  expire(r: Reservation): void {
    for (const s of r.scopes) this.touch(s);
    for (const p of r.places) this.ledgerAt(p).reserved -= r.held;
    r.status = 'EXPIRED';
  }

  due = (r: Reservation) => r.status === 'ACTIVE' && this.now >= r.expiresAt + r.grace;

  /** Before refusing BUDGET_EXCEEDED on a scope that holds budget, its due holds are expired. */
  freeFor(refusal: Refusal | undefined): boolean {
    if (refusal?.code !== 'BUDGET_EXCEEDED' || refusal.cap) return false;
    if ((this.budgets.get(refusal.scope)?.current.reserved ?? 0) <= 0) return false;
    const due = this.reservations.filter((r) => this.due(r) && r.scopes.includes(refusal.scope));
    for (const r of due) this.expire(r);
    return due.length > 0;
  }

  /** A refund of `x` of what `c` charged, on every place: debt first (domain/refunds.ts). */
  refund(c: { refunded: number; places: Place[] }, x: number): void {
    for (const p of c.places) {
      const l = this.ledgerAt(p);
      const share = Math.min(c.refunded + x, p.debt) - Math.min(c.refunded, p.debt);
      const debt = Math.min(share, l.debt);
      const spent = Math.min(x - share, l.spent);
      l.debt -= debt;
      l.spent -= spent;
      l.allocated += x - debt - spent;
    }
    c.refunded += x;
  }
}

// ---- the scenario ----------------------------------------------------------------------------

const SCOPES = ['', 'workspace:w1', 'workspace:w1/app:a1', 'workspace:w2'];
const SUBJECTS = [
  { root: true, scopes: [''] },
  { workspace: 'w1', scopes: ['', 'workspace:w1'] },
  { workspace: 'w1', app: 'a1', scopes: ['', 'workspace:w1', 'workspace:w1/app:a1'] },
  { workspace: 'w2', scopes: ['', 'workspace:w2'] },
] as const;

const policy = fc.constantFrom<Policy>('REJECT', 'ALLOW_IF_AVAILABLE', 'ALLOW_WITH_OVERDRAFT');
const pick = fc.nat();
const subject = fc.nat({ max: SUBJECTS.length - 1 });

const operation = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      op: fc.constant('reserve' as const),
      subject,
      estimate: fc.nat({ max: 800 }),
      policy,
      ttl: fc.oneof(
        fc.integer({ min: 1_000, max: 30_000 }),
        fc.integer({ min: 1_000, max: 7_200_000 }),
      ),
      grace: fc.constantFrom(0, 5_000),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('charge' as const),
      pick,
      amount: fc.integer({ min: 1, max: 500 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('commit' as const),
      pick,
      extra: fc.integer({ min: -50, max: 600 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('release' as const), pick }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('extend' as const),
      pick,
      by: fc.integer({ min: 1, max: 3_600_000 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('refund' as const),
      pick,
      ofEvent: fc.boolean(),
      amount: fc.integer({ min: 1, max: 200 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('event' as const),
      subject,
      actual: fc.nat({ max: 600 }),
      policy,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('fund' as const),
      scope: fc.nat({ max: SCOPES.length - 1 }),
      operation: fc.constantFrom('CREDIT' as const, 'RESET' as const, 'REPAY_DEBT' as const),
      amount: fc.nat({ max: 2_000 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('advance' as const),
      ms: fc.oneof(
        { weight: 3, arbitrary: fc.integer({ min: 0, max: 20_000 }) },
        { weight: 1, arbitrary: fc.integer({ min: 0, max: 2 * DAY }) },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('sweep' as const) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('retry' as const), pick }) },
);
type Operation = typeof operation extends fc.Arbitrary<infer O> ? O : never;

// Budgets roomy enough that most work is admitted (a scope without one refuses everything under
// it): the root always has one, each other scope most of the time.
const budgetOf = (min: number) =>
  fc.record({
    allocated: fc.integer({ min, max: 6_000 }),
    limit: fc.nat({ max: 1_000 }),
    layout: fc.constantFrom('single' as const, 'sharded' as const, 'daily' as const),
    cap: fc.option(fc.integer({ min: 300, max: 1_000 }), { freq: 4 }),
  });
const scenario = fc.record({
  budgets: fc.tuple(
    budgetOf(2_000),
    ...SCOPES.slice(1).map(() => fc.option(budgetOf(200), { freq: 8 })),
  ),
  operations: fc.array(operation, { minLength: 15, maxLength: 40 }),
});
type Scenario = typeof scenario extends fc.Arbitrary<infer S> ? S : never;

// ---- running it over HTTP --------------------------------------------------------------------

interface Run {
  readonly t: GivenTenant;
  readonly model: Model;
  readonly story: string[];
  /** Successful writes, for `retry`: sent again with the same key, they answer the same body. */
  readonly writes: {
    method: string;
    url: string;
    body: Json;
    headers: Record<string, string>;
    answer: Json;
  }[];
}

const observed = (b: Json) => ({
  allocated: amountOf(b.allocated),
  spent: amountOf(b.spent),
  reserved: amountOf(b.reserved),
  debt: amountOf(b.debt),
  remaining: amountOf(b.remaining),
});
const expected = (l: Ledger) => ({
  allocated: l.allocated,
  spent: l.spent,
  reserved: l.reserved,
  debt: l.debt,
  remaining: remainingOf(l),
});

/** A rolling budget past its period shows the next (a read writes nothing). */
function viewOf(model: Model, b: Budget): Ledger {
  const p = b.rolling;
  if (!p || model.now < p.start + DAY) return b.current;
  return { ...b.current, allocated: p.amount, spent: 0, reserved: 0 };
}

async function expectLedgers({ t, model, story }: Run): Promise<void> {
  const actual: Record<string, unknown> = {};
  for (const b of (await balancesOf(stack, t)).values()) {
    actual[relativeScope(t, String(b.scope_path))] = observed(b);
  }
  const want: Record<string, unknown> = {};
  for (const [scope, b] of model.budgets) want[scope] = expected(viewOf(model, b));
  expect(actual, story.join('\n')).toEqual(want);
  for (const [scope, b] of model.budgets) {
    if (!b.rolling) continue;
    const res = await request(
      'GET',
      `${stack.adminUrl}/v1/admin/budgets/periods?scope=${encodeURIComponent(scopeOf(t, scope))}&unit=USD_MICROCENTS&limit=100`,
      { headers: adminHeaders },
    );
    const closed = Object.fromEntries(
      (res.body.periods as Json[]).map((p) => [Date.parse(String(p.period_start)), observed(p)]),
    );
    const modelled = Object.fromEntries([...b.rolling.closed].map(([s, l]) => [s, expected(l)]));
    expect(closed, `${story.join('\n')}\nclosed periods of '${scope}'`).toEqual(modelled);
  }
}

/** The answer's balances are the ledgers after the operation, where each change landed. */
function expectBalances(
  run: Run,
  body: Json,
  places: readonly Pick<Place, 'scope' | 'periodStart'>[],
) {
  const balances = (body.balances as Json[]) ?? [];
  const got = balances.map((b) => [relativeScope(run.t, String(b.scope_path)), observed(b)]);
  const want = places.map((p) => [p.scope, expected(run.model.ledgerAt(p))]);
  expect(got, run.story.join('\n')).toEqual(want);
}

function expectAnswer(run: Run, res: Response, status: number, code?: string): boolean {
  const got = res.status < 300 ? res.status : `${res.status} ${errorOf(res).error}`;
  run.story.push(`  → ${JSON.stringify(got)}; model ${code ? `${status} ${code}` : status}`);
  expect(got, run.story.join('\n')).toBe(code ? `${status} ${code}` : status);
  return res.status < 300;
}

async function send(run: Run, method: string, path: string, body: Json, admin = false) {
  const base = admin ? stack.adminUrl : stack.runtimeUrl;
  const headers = admin ? adminHeaders : run.t.headers;
  const full = { idempotency_key: randomUUID(), ...body };
  const res = await request(method, `${base}${path}`, { headers, body: full });
  if (res.status < 300) {
    run.writes.push({ method, url: `${base}${path}`, body: full, headers, answer: res.body });
  }
  return res;
}

/** The settlement of an ACTIVE reservation's operation: 409 / 410 first, as the service says. */
function gate(run: Run, r: Reservation, op: 'charge' | 'commit' | 'release' | 'extend') {
  const { model } = run;
  if (r.status === 'EXPIRED') return { status: 410, code: 'RESERVATION_EXPIRED' };
  if (r.status !== 'ACTIVE') return { status: 409, code: 'RESERVATION_FINALIZED' };
  if (model.due(r)) {
    model.expire(r);
    return { status: 410, code: 'RESERVATION_EXPIRED' };
  }
  for (const s of r.scopes) model.touch(s);
  if (op === 'extend' && model.now >= r.expiresAt)
    return { status: 410, code: 'RESERVATION_EXPIRED' };
  return undefined;
}

async function step(run: Run, o: Operation): Promise<void> {
  const { model } = run;
  const nth = <T>(list: readonly T[], n: number) => list[n % Math.max(1, list.length)];
  switch (o.op) {
    case 'reserve': {
      const s = SUBJECTS[o.subject] as (typeof SUBJECTS)[number];
      const subjectBody = 'root' in s ? { tenant: run.t.tenant } : { ...s, scopes: undefined };
      for (const scope of s.scopes) model.touch(scope);
      let refusal = model.admit(s.scopes, o.estimate);
      if (model.freeFor(refusal)) refusal = model.admit(s.scopes, o.estimate);
      const res = await send(run, 'POST', '/v1/reservations', {
        subject: subjectBody,
        action: { kind: 'llm', name: 'm' },
        estimate: usd(o.estimate),
        overage_policy: o.policy,
        ttl_ms: o.ttl,
        grace_period_ms: o.grace,
      });
      if (!expectAnswer(run, res, refusal ? 409 : 200, refusal?.code)) return;
      for (const scope of s.scopes)
        (model.budgets.get(scope) as Budget).current.reserved += o.estimate;
      model.reservations.push({
        id: String(res.body.reservation_id),
        scopes: [...s.scopes],
        estimate: o.estimate,
        policy: o.policy,
        status: 'ACTIVE',
        expiresAt: Number(res.body.expires_at_ms),
        grace: o.grace,
        held: o.estimate,
        charged: 0,
        charges: 0,
        refunded: 0,
        places: s.scopes.map((scope) => model.placeOf(scope)),
      });
      expect(res.body.expires_at_ms).toBe(model.now + o.ttl);
      expectBalances(
        run,
        res.body,
        s.scopes.map((scope) => model.placeOf(scope)),
      );
      return;
    }
    case 'charge':
    case 'commit':
    case 'release':
    case 'extend': {
      const r = nth(model.reservations, o.pick);
      if (!r) return;
      const stop = gate(run, r, o.op);
      const path = `/v1/reservations/${r.id}/${o.op === 'charge' ? 'charges' : o.op}`;
      const body =
        o.op === 'charge'
          ? { amount: usd(o.amount) }
          : o.op === 'commit'
            ? { actual: usd(Math.max(0, r.charged + o.extra)) }
            : o.op === 'extend'
              ? { extend_by_ms: o.by }
              : {};
      const res = await send(run, 'POST', path, body);
      if (stop) {
        expectAnswer(run, res, stop.status, stop.code);
        return;
      }
      const ledgers = r.places.map((p): [string, Ledger] => [p.scope, model.ledgerAt(p)]);
      if (o.op === 'extend') {
        if (!expectAnswer(run, res, 200)) return;
        r.expiresAt += o.by;
        expect(res.body.expires_at_ms, run.story.join('\n')).toBe(r.expiresAt);
        return;
      }
      if (o.op === 'release') {
        if (!expectAnswer(run, res, 200)) return;
        for (const [, l] of ledgers) l.reserved -= r.held;
        expect(res.body.released, run.story.join('\n')).toEqual(usd(r.held));
        r.status = 'RELEASED';
        expectBalances(run, res.body, r.places);
        return;
      }
      if (o.op === 'commit' && Math.max(0, r.charged + o.extra) < r.charged) {
        expectAnswer(run, res, 400, 'INVALID_REQUEST');
        return;
      }
      const amount = o.op === 'charge' ? o.amount : Math.max(0, r.charged + o.extra) - r.charged;
      const fromHold = o.op === 'charge' ? Math.min(r.held, amount) : r.held;
      const outcome = model.charge(ledgers, fromHold, amount, r.policy);
      if (!expectAnswer(run, res, outcome.refusal ? 409 : 200, outcome.refusal?.code)) return;
      outcome.debts?.forEach((debt, i) => {
        (r.places[i] as Place).debt += debt;
      });
      r.held -= fromHold;
      if (o.op === 'charge') {
        r.charged += amount;
        r.charges++;
        expect(
          { sequence: res.body.sequence, held: res.body.held, total: res.body.charged_total },
          run.story.join('\n'),
        ).toEqual({ sequence: r.charges, held: usd(r.held), total: usd(r.charged) });
      } else {
        r.committed = r.charged + amount;
        r.status = 'COMMITTED';
        expect(
          { charged: res.body.charged, released: res.body.released },
          run.story.join('\n'),
        ).toEqual({
          charged: usd(r.committed),
          released: usd(Math.max(0, r.estimate - r.committed)),
        });
      }
      expectBalances(run, res.body, r.places);
      return;
    }
    case 'refund': {
      const target = o.ofEvent ? nth(model.events, o.pick) : nth(model.reservations, o.pick);
      if (!target) return;
      const charged =
        'status' in target
          ? target.status === 'COMMITTED'
            ? (target.committed ?? 0)
            : target.charged
          : target.actual;
      const path =
        'status' in target
          ? `/v1/reservations/${target.id}/refunds`
          : `/v1/events/${target.id}/refunds`;
      for (const p of target.places) model.touch(p.scope);
      const res = await send(run, 'POST', path, { amount: usd(o.amount), reason: 'model' }, true);
      const left = charged - target.refunded;
      if (
        !expectAnswer(
          run,
          res,
          o.amount > left ? 400 : 200,
          o.amount > left ? 'INVALID_REQUEST' : undefined,
        )
      )
        return;
      model.refund(target, o.amount);
      expect(
        { total: res.body.refunded_total, left: res.body.refundable },
        run.story.join('\n'),
      ).toEqual({ total: usd(target.refunded), left: usd(charged - target.refunded) });
      expectBalances(run, res.body, target.places);
      return;
    }
    case 'event': {
      const s = SUBJECTS[o.subject] as (typeof SUBJECTS)[number];
      for (const scope of s.scopes) model.touch(scope);
      const eventPolicy: Policy = o.policy === 'REJECT' ? 'ALLOW_IF_AVAILABLE' : o.policy;
      const refusalOf = () => {
        const missing = s.scopes.filter((scope) => !model.budgets.has(scope));
        const present = s.scopes.filter((scope) => model.budgets.has(scope));
        const probe = present.map((scope): [string, Ledger] => [
          scope,
          { ...(model.budgets.get(scope) as Budget).current },
        ]);
        const charge = new Model().charge(probe, 0, o.actual, eventPolicy);
        return first([
          ...missing.map((scope) => ({ code: 'BUDGET_EXCEEDED' as const, scope })),
          charge.refusal,
        ]);
      };
      let refusal = refusalOf();
      if (model.freeFor(refusal)) refusal = refusalOf();
      const res = await send(run, 'POST', '/v1/events', {
        subject: 'root' in s ? { tenant: run.t.tenant } : { ...s, scopes: undefined },
        action: { kind: 'tool', name: 'search' },
        actual: usd(o.actual),
        overage_policy: o.policy,
      });
      if (!expectAnswer(run, res, refusal ? 409 : 201, refusal?.code)) return;
      const places = s.scopes.map((scope) => model.placeOf(scope));
      const ledgers = places.map((p): [string, Ledger] => [p.scope, model.ledgerAt(p)]);
      const { debts } = model.charge(ledgers, 0, o.actual, eventPolicy);
      debts?.forEach((debt, i) => {
        (places[i] as Place).debt = debt;
      });
      model.events.push({ id: String(res.body.event_id), actual: o.actual, refunded: 0, places });
      expectBalances(run, res.body, places);
      return;
    }
    case 'fund': {
      const scope = SCOPES[o.scope] as string;
      const b = model.budgets.get(scope);
      if (!b) return;
      model.touch(scope);
      const res = await send(
        run,
        'POST',
        `/v1/admin/budgets/fund?scope=${encodeURIComponent(scopeOf(run.t, scope))}&unit=USD_MICROCENTS`,
        { operation: o.operation, amount: usd(o.amount) },
        true,
      );
      if (!expectAnswer(run, res, 200)) return;
      const l = b.current;
      if (o.operation === 'CREDIT') l.allocated += o.amount;
      if (o.operation === 'RESET') l.allocated = o.amount;
      if (o.operation === 'REPAY_DEBT') {
        const repaid = Math.min(l.debt, o.amount);
        l.debt -= repaid;
        l.allocated += o.amount - repaid;
      }
      return;
    }
    case 'advance':
      clock.advance(o.ms);
      model.now = clock.now();
      return;
    case 'sweep': {
      const due = model.reservations.filter(model.due);
      await sweepOnce();
      for (const r of due) model.expire(r);
      run.story.push(`  → expired ${due.length}`);
      return;
    }
    case 'retry': {
      const w = nth(run.writes, o.pick);
      if (!w) return;
      const res = await request(w.method, w.url, { headers: w.headers, body: w.body });
      run.story.push(`  → ${res.status} (a retry of ${w.url})`);
      expect(res.status, run.story.join('\n')).toBeLessThan(300);
      expect(withoutLease(res.body), run.story.join('\n')).toEqual(withoutLease(w.answer));
      return;
    }
  }
}

async function runScenario({ budgets, operations }: Scenario): Promise<void> {
  const t = await givenTenant(stack);
  const model = new Model();
  model.now = clock.now();
  const run: Run = { t, model, story: [`tenant ${t.tenant}`], writes: [] };
  for (const [i, b] of budgets.entries()) {
    const scope = SCOPES[i] as string;
    if (!b) continue;
    const res = await request('POST', `${stack.adminUrl}/v1/admin/budgets`, {
      headers: adminHeaders,
      body: {
        scope: scopeOf(t, scope),
        unit: 'USD_MICROCENTS',
        allocated: usd(b.allocated),
        overdraft_limit: usd(b.limit),
        ...(b.layout === 'sharded' && { shards: 3 }),
        ...(b.layout === 'daily' && { period: 'DAILY' }),
        ...(b.cap !== null && { max_reservation_amount: usd(b.cap) }),
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const current = { allocated: b.allocated, spent: 0, reserved: 0, debt: 0, limit: b.limit };
    model.budgets.set(scope, {
      current,
      cap: b.cap ?? undefined,
      rolling:
        b.layout === 'daily'
          ? { start: Math.floor(model.now / DAY) * DAY, amount: b.allocated, closed: new Map() }
          : undefined,
    });
    run.story.push(`budget '${scope}' ${JSON.stringify(b)}`);
  }
  await expectLedgers(run);
  for (const o of operations) {
    run.story.push(JSON.stringify(o));
    await step(run, o);
    await expectLedgers(run);
  }
}

describe('settlement as agents spend, against a model', () => {
  it('keeps every ledger and answer equal to the model through random charges, commits, releases, extends, expiries, refunds and funding', async () => {
    await assertModel('settlement model', scenario, runScenario, 8);
  });
});
