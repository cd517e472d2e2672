import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import {
  adminHeaders,
  fund,
  type GivenTenant,
  givenBudget,
  givenTenant,
  reserveBody,
  scopeOf,
  usd,
} from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { reservationsApi, withoutLease } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// Caps (issue 13, point 4; docs/decisions.md, "Caps"): a budget carries SPEC's Caps, optionally
// only below a share of its allocation, and a reserve, dry run or decide whose scopes carry
// caps that apply answers ALLOW_WITH_CAPS with them merged. Server time stands still, so a
// replay answers the very same bytes, remaining_ttl_ms included.
const clock = testClock({ frozen: true });
const stack = useTestStack({ clock });
const { create, reserve, commit } = reservationsApi(stack);

const createBudget = (body: Json) =>
  request('POST', `${stack.adminUrl}/v1/admin/budgets`, { headers: adminHeaders, body });
const decide = (t: GivenTenant, body: Json) =>
  request('POST', `${stack.runtimeUrl}/v1/decide`, { headers: t.headers, body });
const decideBody = (overrides: Json = {}) => {
  const { dry_run: _, ...body } = reserveBody(overrides);
  return body;
};

/** A tenant with a root and a `workspace:w` budget, each with the given caps options. */
async function tenantWith(
  root: Parameters<typeof givenBudget>[4] & { allocated?: number },
  workspace: Parameters<typeof givenBudget>[4] & { allocated?: number } = {},
) {
  const t = await givenTenant(stack);
  await givenBudget(stack, t, '', root.allocated ?? 100_000, root);
  await givenBudget(stack, t, 'workspace:w', workspace.allocated ?? 100_000, workspace);
  return t;
}

describe('POST /v1/admin/budgets with caps', () => {
  it('creates a budget with caps and a soft landing, answered exactly as a budget without them', async () => {
    const t = await givenTenant(stack);

    const capped = await createBudget({
      scope: scopeOf(t, ''),
      unit: 'USD_MICROCENTS',
      allocated: usd(1_000),
      caps: { max_tokens: 4_096, tool_allowlist: ['search'], cooldown_ms: 0 },
      caps_when_remaining_below_bps: 2_000,
    });
    const plain = await createBudget({
      scope: scopeOf(t, 'workspace:w'),
      unit: 'USD_MICROCENTS',
      allocated: usd(1_000),
    });

    expect(capped.status, JSON.stringify(capped.body)).toBe(201);
    expect(Object.keys(capped.body).sort()).toEqual(Object.keys(plain.body).sort());
    expect(capped.body).not.toHaveProperty('caps');
  });

  it('refuses malformed caps with 400 INVALID_REQUEST naming the field, and creates nothing', async () => {
    const t = await givenTenant(stack);
    const cases: [Json, string][] = [
      [{ caps: { max_tokens: -1 } }, 'caps.max_tokens'],
      [{ caps: { max_steps_remaining: 1.5 } }, 'caps.max_steps_remaining'],
      [{ caps: { cooldown_ms: '10' } }, 'caps.cooldown_ms'],
      [{ caps: { max_tokens: 2 ** 53 } }, 'caps.max_tokens'],
      [{ caps: { tool_allowlist: 'search' } }, 'caps.tool_allowlist'],
      [{ caps: { tool_allowlist: [] } }, 'caps.tool_allowlist'],
      [{ caps: { tool_denylist: [''] } }, 'caps.tool_denylist.0'],
      [{ caps: { tool_denylist: ['x'.repeat(257)] } }, 'caps.tool_denylist.0'],
      [{ caps: { tool_allowlist: ['a', 'b'], tool_denylist: ['b'] } }, 'caps.tool_denylist'],
      [{ caps: {} }, 'caps'],
      [{ caps: null }, 'caps'],
      [{ caps: [] }, 'caps'],
      [{ caps: { max_token: 10 } }, 'caps'],
      [{ caps: { tool_denylist: Array.from({ length: 60 }, (_, i) => `tool-${i}`) } }, 'caps'],
      [{ caps_when_remaining_below_bps: 5_000 }, 'caps_when_remaining_below_bps'],
      [
        { caps: { max_tokens: 1 }, caps_when_remaining_below_bps: 0 },
        'caps_when_remaining_below_bps',
      ],
      [
        { caps: { max_tokens: 1 }, caps_when_remaining_below_bps: 10_001 },
        'caps_when_remaining_below_bps',
      ],
      [
        { caps: { max_tokens: 1 }, caps_when_remaining_below_bps: 0.5 },
        'caps_when_remaining_below_bps',
      ],
    ];

    for (const [fields, field] of cases) {
      const res = await createBudget({
        scope: scopeOf(t, ''),
        unit: 'USD_MICROCENTS',
        allocated: usd(1_000),
        ...fields,
      });
      const error = expectError(res, 400, 'INVALID_REQUEST', 'admin');
      expect(
        error.message.startsWith(`${field}: `),
        `${JSON.stringify(fields)} → ${error.message}`,
      ).toBe(true);
    }
    const after = await createBudget({
      scope: scopeOf(t, ''),
      unit: 'USD_MICROCENTS',
      allocated: usd(1_000),
    });
    expect(after.status, JSON.stringify(after.body)).toBe(201);
  });
});

describe('ALLOW_WITH_CAPS', () => {
  const caps = { max_tokens: 1_024, tool_denylist: ['shell'] };

  it('answers a reserve, a dry run and a decide on a capped budget with the caps', async () => {
    const t = await tenantWith({ caps });

    const live = await reserve(t);
    const dry = await reserve(t, { dry_run: true });
    const decided = await decide(t, decideBody());

    expect(live.status, JSON.stringify(live.body)).toBe(200);
    expect(live.body).toMatchObject({ decision: 'ALLOW_WITH_CAPS', caps });
    expect(dry.body).toMatchObject({ decision: 'ALLOW_WITH_CAPS', caps });
    expect(decided.status, JSON.stringify(decided.body)).toBe(200);
    expect(decided.body).toEqual({
      decision: 'ALLOW_WITH_CAPS',
      caps,
      affected_scopes: [scopeOf(t, ''), scopeOf(t, 'workspace:w')],
    });
    expect((await commit(t, live.body.reservation_id, { actual: usd(60) })).status).toBe(200);
  });

  it('answers ALLOW with no caps field when no affected budget carries caps', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 100_000);
    await givenBudget(stack, t, 'workspace:w', 100_000);
    await givenBudget(stack, t, 'workspace:other', 100_000, { caps });

    const live = await reserve(t);
    const decided = await decide(t, decideBody());

    expect(live.body.decision).toBe('ALLOW');
    expect(live.body).not.toHaveProperty('caps');
    expect(decided.body).toEqual({
      decision: 'ALLOW',
      affected_scopes: [scopeOf(t, ''), scopeOf(t, 'workspace:w')],
    });
  });

  it('merges the caps of every affected scope: smallest numbers, shared allowed tools, all denied ones, longest cooldown', async () => {
    const t = await tenantWith(
      {
        caps: {
          max_tokens: 4_096,
          max_steps_remaining: 10,
          tool_allowlist: ['search', 'read_file', 'write_file'],
          tool_denylist: ['shell'],
          cooldown_ms: 250,
        },
      },
      {
        caps: {
          max_tokens: 1_000,
          tool_allowlist: ['write_file', 'read_file', 'fetch'],
          tool_denylist: ['deploy'],
          cooldown_ms: 5_000,
        },
      },
    );
    await givenBudget(stack, t, 'workspace:w/agent:a', 100_000, {
      caps: { tool_denylist: ['write_file'] },
    });
    const merged = {
      max_tokens: 1_000,
      max_steps_remaining: 10,
      // write_file is allowed by both lists but denied by the agent: clients read only an
      // allowlist when there is one, so it leaves the list.
      tool_allowlist: ['read_file'],
      tool_denylist: ['deploy', 'shell', 'write_file'],
      cooldown_ms: 5_000,
    };

    const live = await reserve(t, { subject: { workspace: 'w', agent: 'a' } });
    const dry = await reserve(t, { subject: { workspace: 'w', agent: 'a' }, dry_run: true });
    const decided = await decide(t, decideBody({ subject: { workspace: 'w', agent: 'a' } }));

    expect(live.body.affected_scopes).toHaveLength(3);
    for (const res of [live, dry, decided]) {
      expect(res.body, JSON.stringify(res.body)).toMatchObject({
        decision: 'ALLOW_WITH_CAPS',
        caps: merged,
      });
    }
  });

  it('gives no caps with a DENY, and refuses a live reserve with 409 as ever', async () => {
    const t = await tenantWith({ caps, allocated: 100 });

    const dry = await reserve(t, { dry_run: true, estimate: usd(500) });
    const decided = await decide(t, decideBody({ estimate: usd(500) }));
    const live = await reserve(t, { estimate: usd(500) });

    expect(dry.body).toMatchObject({ decision: 'DENY', reason_code: 'BUDGET_EXCEEDED' });
    expect(dry.body).not.toHaveProperty('caps');
    expect(decided.body).toEqual({
      decision: 'DENY',
      affected_scopes: [scopeOf(t, ''), scopeOf(t, 'workspace:w')],
      reason_code: 'BUDGET_EXCEEDED',
    });
    expectError(live, 409, 'BUDGET_EXCEEDED', 'runtime');
  });

  it('lands softly: caps only once the remaining after the hold falls below the share of allocated', async () => {
    // Caps from below 20 % of 1 000 remaining: 200.
    const t = await tenantWith({ allocated: 1_000, caps, capsWhenRemainingBelowBps: 2_000 });

    const above = await reserve(t, { estimate: usd(700) }); // leaves 300
    const atThreshold = await reserve(t, { estimate: usd(100), dry_run: true }); // would leave 200
    const decideAt = await decide(t, decideBody({ estimate: usd(100) }));
    const below = await decide(t, decideBody({ estimate: usd(101) })); // would leave 199
    const dryBelow = await reserve(t, { estimate: usd(101), dry_run: true });
    const liveBelow = await reserve(t, { estimate: usd(150) }); // leaves 150

    expect(above.body.decision).toBe('ALLOW');
    expect(above.body).not.toHaveProperty('caps');
    expect(atThreshold.body.decision).toBe('ALLOW');
    expect(decideAt.body.decision).toBe('ALLOW');
    expect(below.body).toMatchObject({ decision: 'ALLOW_WITH_CAPS', caps });
    expect(dryBelow.body).toMatchObject({ decision: 'ALLOW_WITH_CAPS', caps });
    expect(liveBelow.body).toMatchObject({ decision: 'ALLOW_WITH_CAPS', caps });
  });

  it('works on a budget split into escrow shards: the share is of the whole budget', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000, {
      shards: 4,
      caps,
      capsWhenRemainingBelowBps: 5_000,
    });
    const subject = { tenant: t.tenant };

    const first = await reserve(t, { subject, estimate: usd(200) }); // leaves 800
    const second = await reserve(t, { subject, estimate: usd(200) }); // leaves 600
    const third = await reserve(t, { subject, estimate: usd(150) }); // leaves 450: below 500
    const decided = await decide(t, decideBody({ subject, estimate: usd(1) }));
    await commit(t, first.body.reservation_id, { actual: usd(0) }); // back to 650
    const fourth = await reserve(t, { subject, estimate: usd(100) }); // leaves 550

    expect([first, second, third, fourth].map((r) => r.body.decision)).toEqual([
      'ALLOW',
      'ALLOW',
      'ALLOW_WITH_CAPS',
      'ALLOW',
    ]);
    expect(third.body.caps).toEqual(caps);
    expect(decided.body).toMatchObject({ decision: 'ALLOW_WITH_CAPS', caps });
  });
});

describe('replays', () => {
  const caps = { max_steps_remaining: 3, cooldown_ms: 1_000 };

  it('answer the same decision and caps, byte for byte, even once the budget has moved', async () => {
    const t = await tenantWith({ allocated: 1_000, caps, capsWhenRemainingBelowBps: 5_000 });
    const uncapped = reserveBody({ estimate: usd(400) }); // leaves 600: ALLOW
    const capped = reserveBody({ estimate: usd(200) }); // leaves 400: ALLOW_WITH_CAPS
    const decided = decideBody({ estimate: usd(1) });

    const first = [await create(t, uncapped), await create(t, capped), await decide(t, decided)];
    // Now every hold would be capped, then none would.
    const replays = [await create(t, uncapped), await create(t, capped), await decide(t, decided)];
    expect((await fund(stack, t, '', 'CREDIT', 100_000)).status).toBe(200);
    const afterCredit = [
      await create(t, uncapped),
      await create(t, capped),
      await decide(t, decided),
    ];
    await commit(t, first[1]?.body.reservation_id, { actual: usd(10) });
    const afterCommit = await create(t, capped);

    expect(first.map((r) => r.body.decision)).toEqual([
      'ALLOW',
      'ALLOW_WITH_CAPS',
      'ALLOW_WITH_CAPS',
    ]);
    expect(first[1]?.body.caps).toEqual(caps);
    for (const again of [replays, afterCredit]) {
      expect(again.map((r) => JSON.stringify(r.body))).toEqual(
        first.map((r) => JSON.stringify(r.body)),
      );
    }
    expect(JSON.stringify(withoutLease(afterCommit.body))).toBe(
      JSON.stringify(withoutLease(first[1]?.body ?? {})),
    );
  });
});

// ---- through the TypeScript SDK's wire format ----------------------------------------------
//
// What runcycles/cycles-client-typescript reads from a reserve answer, followed from its source
// (not copied): src/lifecycle.ts `isSchemaValidCreateResponse` and `isCaps` (a create response
// is used only if it has no key outside its field list, and caps only the five SPEC keys,
// integers ≥ 0 and arrays of strings of at most 256 characters), src/mappers.ts `capsFromWire`
// and `reservationCreateResponseFromWire` (snake_case → maxTokens, maxStepsRemaining,
// toolAllowlist, toolDenylist, cooldownMs), src/lifecycle.ts `execute` (the guarded function's
// context gets `caps: resResult.caps`, src/context.ts `CyclesContext.caps`) and src/models.ts
// `isToolAllowed` (a non-empty allowlist wins over the denylist).
const SdkInt = z.number().int().nonnegative();
const SdkCaps = z.strictObject({
  max_tokens: SdkInt.optional(),
  max_steps_remaining: SdkInt.optional(),
  tool_allowlist: z.array(z.string().max(256)).optional(),
  tool_denylist: z.array(z.string().max(256)).optional(),
  cooldown_ms: SdkInt.optional(),
});
const SdkAmount = z.strictObject({
  unit: z.enum(['USD_MICROCENTS', 'TOKENS', 'CREDITS', 'RISK_POINTS']),
  amount: SdkInt,
});
const SdkCreateResponse = z.strictObject({
  decision: z.enum(['ALLOW', 'ALLOW_WITH_CAPS', 'DENY']),
  reservation_id: z.string().optional(),
  affected_scopes: z.array(z.string()),
  expires_at_ms: SdkInt.optional(),
  remaining_ttl_ms: SdkInt.optional(),
  scope_path: z.string().optional(),
  reserved: SdkAmount.optional(),
  caps: SdkCaps.optional(),
  reason_code: z.string().max(128).optional(),
  retry_after_ms: SdkInt.optional(),
  balances: z.array(z.record(z.string(), z.unknown())).optional(),
  cycles_evidence: z.unknown().optional(),
});

/** The caps a guarded function finds in its context, as the SDK names them. */
const contextCaps = (wire: z.infer<typeof SdkCaps>) =>
  Object.fromEntries(
    Object.entries({
      maxTokens: wire.max_tokens,
      maxStepsRemaining: wire.max_steps_remaining,
      toolAllowlist: wire.tool_allowlist,
      toolDenylist: wire.tool_denylist,
      cooldownMs: wire.cooldown_ms,
    }).filter(([, v]) => v !== undefined),
  );

describe('the SDK’s guarded call', () => {
  it('gets the caps merged across the tenant and workspace budgets in its context', async () => {
    const t = await tenantWith(
      { caps: { max_tokens: 8_000, tool_allowlist: ['search', 'summarize'], cooldown_ms: 100 } },
      { caps: { max_tokens: 2_000, max_steps_remaining: 5, tool_denylist: ['search'] } },
    );
    // The body the SDK's guarded call sends (src/lifecycle.ts buildReservationBody).
    const body = {
      idempotency_key: randomUUID(),
      subject: { tenant: t.tenant, workspace: 'w' },
      action: { kind: 'llm.completion', name: 'gpt-4o' },
      estimate: { unit: 'USD_MICROCENTS', amount: 500 },
      ttl_ms: 60_000,
      overage_policy: 'ALLOW_IF_AVAILABLE',
    };

    const res = await create(t, body);

    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const parsed = SdkCreateResponse.safeParse(res.body);
    expect(parsed.error?.issues ?? []).toEqual([]);
    expect(parsed.data?.decision).toBe('ALLOW_WITH_CAPS');
    expect(parsed.data?.reservation_id).toMatch(/^rsv_/);
    const caps = contextCaps(parsed.data?.caps ?? {});
    expect(caps).toEqual({
      maxTokens: 2_000,
      maxStepsRemaining: 5,
      // The tenant allows search and summarize, the workspace denies search.
      toolAllowlist: ['summarize'],
      toolDenylist: ['search'],
      cooldownMs: 100,
    });
    expect((await commit(t, res.body.reservation_id, { actual: usd(400) })).status).toBe(200);
  });
});
