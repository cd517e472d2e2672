import { randomUUID } from 'node:crypto';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Reservation } from '../../functions/domain/reservation.js';
import { testClock } from '../helpers/clock.js';
import { expectError } from '../helpers/errors.js';
import {
  adminHeaders,
  type GivenTenant,
  givenBudget,
  givenTenant,
  givenTenantWith,
  sleep,
  usd,
} from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// Issue 28, point 4: estimate accuracy, aggregated off the hot path from the table's stream
// (docs/decisions.md § Estimate accuracy). This file's stack reads its table's stream, as
// `npm start` does by default. Server time stands still until a test moves it, so every hold's
// duration (the unit-seconds held but not spent) is exact; the tests run one at a time.
const clock = testClock({ frozen: true });
const stack = useTestStack({
  clock,
  // EMF on (the EstimateRatio metric): what the process writes is kept, not printed.
  env: {
    ESTIMATE_ACCURACY: 'true',
    STREAM_POLL_INTERVAL_MS: '50',
    POWERTOOLS_METRICS_DISABLED: 'false',
  },
});
const written: string[] = [];
beforeAll(() => {
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  });
});
afterAll(() => {
  vi.restoreAllMocks();
});
const api = reservationsApi(stack);

const accuracyUrl = (t: GivenTenant, rel = '') =>
  `${stack.adminUrl}/v1/admin/budgets/accuracy?scope=${encodeURIComponent(`tenant:${t.tenant}${rel ? `/${rel}` : ''}`)}&unit=USD_MICROCENTS`;

/** The figures once `n` settlements have been added (the stream is read every 50 ms). */
async function accuracyOnce(t: GivenTenant, n: number, rel = ''): Promise<Json> {
  for (let i = 0; i < 200; i++) {
    const res = await request('GET', accuracyUrl(t, rel), { headers: adminHeaders });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const total = res.body.total as Json;
    const seen = Number(total.settled) + Number(total.released) + Number(total.expired);
    if (seen >= n) return res.body;
    await sleep(50);
  }
  throw new Error(`accuracy: fewer than ${n} settlements after 10 s`);
}

const figures = (settled: number, estimate: number, actual: number, extra: Json) => ({
  settled,
  estimate_total: usd(estimate),
  actual_total: usd(actual),
  ...extra,
});
const histogram = (buckets: Record<number, number>) =>
  Array.from({ length: 13 }, (_, i) => buckets[i] ?? 0);

describe('GET /v1/admin/budgets/accuracy', () => {
  it('counts, sums, buckets and suggests per kind, from the stream, with the unit-seconds held but not spent', async () => {
    const t = await givenTenantWith(stack, { '': 1_000_000, 'workspace:w': 1_000_000 });
    const reserve = (kind: string, estimate: number, extra: Json = {}) =>
      api.reserve(t, { action: { kind, name: 'm' }, estimate: usd(estimate), ...extra });
    const [r1, r2, r3, r4, r5, r6] = await Promise.all([
      reserve('llm', 1_000),
      reserve('llm', 1_000),
      reserve('llm', 1_000),
      reserve('llm', 1_000),
      reserve('tool', 200, { overage_policy: 'ALLOW_IF_AVAILABLE' }),
      reserve('tool', 100, { ttl_ms: 1_000, grace_period_ms: 0 }),
    ]);
    const id = (r: typeof r1) => r?.body.reservation_id;
    await api.commit(t, id(r5), { actual: usd(500) });
    clock.advance(1_000);
    await api.commit(t, id(r2), { actual: usd(1_000) });
    await api.release(t, id(r4));
    await api.charge(t, id(r3), { amount: usd(300) });
    clock.advance(500);
    // Past its deadline: the commit expires it (410), 1.5 s after it was made.
    expectError(await api.commit(t, id(r6), { actual: usd(50) }), 410, 'RESERVATION_EXPIRED');
    clock.advance(500);
    await api.commit(t, id(r1), { actual: usd(500) });
    clock.advance(1_000);
    await api.release(t, id(r3));

    const root = await accuracyOnce(t, 6);
    const workspace = await accuracyOnce(t, 6, 'workspace:w');

    expect(root.ratio_bounds).toEqual([0.1, 0.25, 0.5, 0.75, 0.9, 1, 1.1, 1.25, 1.5, 2, 3, 5]);
    const [llm, tool] = root.kinds as Json[];
    // r1 500 of 1000 (2 s), r2 1000 of 1000 (1 s), r3 charged 300 then released (3 s), r4
    // released unspent (1 s): 500×2 + 0 + 700×3 + 1000×1 = 4100 unit-seconds held, never spent.
    expect(llm).toEqual({
      kind: 'llm',
      ...figures(3, 3_000, 1_800, {
        actual_to_estimate: 0.6,
        histogram: histogram({ 2: 2, 5: 1 }),
        coverage_95_ratio: 1,
        suggested_estimate: usd(1_000),
        held_unspent_unit_seconds: 4_100,
        released: 1,
        expired: 0,
        last_settled_at: expect.any(String),
      }),
    });
    // r5 500 of 200 (at once), r6 expired unspent after 1.5 s: 100 × 1.5.
    expect(tool).toEqual({
      kind: 'tool',
      ...figures(1, 200, 500, {
        actual_to_estimate: 2.5,
        histogram: histogram({ 10: 1 }),
        coverage_95_ratio: 3,
        suggested_estimate: usd(600),
        held_unspent_unit_seconds: 150,
        released: 0,
        expired: 1,
        last_settled_at: expect.any(String),
      }),
    });
    expect(root.other).toMatchObject({ settled: 0, released: 0, expired: 0 });
    expect(root.total).toMatchObject(
      figures(4, 3_200, 2_300, { held_unspent_unit_seconds: 4_250 }),
    );
    // Every budget a reservation held on counts it.
    expect(workspace.kinds).toEqual(root.kinds);
  });

  it('keeps 16 kinds of their own and the rest in other; a kind idle for a week gives its place', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000_000);
    const settle = async (kind: string) => {
      const r = await api.reserve(t, {
        subject: { tenant: t.tenant },
        action: { kind, name: 'm' },
        estimate: usd(100),
      });
      await api.commit(t, r.body.reservation_id, { actual: usd(100) });
    };
    const kinds = Array.from({ length: 16 }, (_, i) => `kind-${String(i).padStart(2, '0')}`);
    await Promise.all(kinds.map(settle));
    await accuracyOnce(t, 16);

    await settle('late-comer');
    const full = await accuracyOnce(t, 17);
    clock.advance(8 * 86_400_000);
    await settle('new-kind');
    const after = await accuracyOnce(t, 18);

    expect((full.kinds as Json[]).map((k) => k.kind)).toEqual(kinds);
    expect(full.other).toMatchObject({ settled: 1 });
    const names = (after.kinds as Json[]).map((k) => k.kind);
    expect(names).toHaveLength(16);
    expect(names).toContain('new-kind');
    // The evicted kind's figures moved to other: nothing is lost from the budget's total.
    expect(after.other).toMatchObject({ settled: 2 });
    expect(after.total).toMatchObject({ settled: 18, estimate_total: usd(1_800) });
  });

  it('answers the admin key, a tenant key with balances:read for its own tenant; 404 for no budget', async () => {
    const t = await givenTenantWith(stack, { '': 1_000 });
    const reader = await givenTenant(stack, ['balances:read']);
    const own = { ...t, headers: t.headers };

    const mine = await request('GET', accuracyUrl(own), { headers: own.headers });
    const theirs = await request('GET', accuracyUrl(t), { headers: reader.headers });
    const none = await request('GET', accuracyUrl(t, 'workspace:none'), { headers: adminHeaders });

    expect(mine.status).toBe(200);
    expect(mine.body).toMatchObject({ kinds: [], total: { settled: 0 } });
    expectError(theirs, 403, 'FORBIDDEN');
    expectError(none, 404, 'NOT_FOUND');
  });

  it('adds a batch delivered again within 10 minutes once (its transactions carry tokens)', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000);
    const { handler } = await import('../../functions/jobs/estimate-accuracy.js');
    const { reservationItem } = await import('../../functions/store/entities/reservation.js');
    const now = clock.now();
    const r: Reservation = {
      reservationId: `rsv_${randomUUID().replaceAll('-', '')}`,
      tenant: t.tenant,
      status: 'ACTIVE',
      idempotencyKey: randomUUID(),
      subject: { tenant: t.tenant },
      action: { kind: 'replayed', name: 'm' },
      reserved: usd(100) as Reservation['reserved'],
      createdAtMs: now - 1_000,
      expiresAtMs: now + 60_000,
      gracePeriodMs: 5_000,
      scopePath: `tenant:${t.tenant}`,
      holds: [{ scope: `tenant:${t.tenant}`, shard: 0 }],
      overagePolicy: 'REJECT',
      ttlMs: 61_000,
    };
    // The items as the stream shows them: as reserved, and as the commit left it.
    const image = (x: Reservation, settled = {}) =>
      marshall(
        { ...reservationItem(x, { fingerprint: 'f', result: {} }), ...settled },
        {
          removeUndefinedValues: true,
        },
      );
    const committed: Reservation = {
      ...r,
      status: 'COMMITTED',
      committed: usd(40) as Reservation['reserved'],
      finalizedAtMs: now,
    };
    const event = {
      Records: [
        {
          eventID: `replayed-${randomUUID()}`,
          eventName: 'MODIFY',
          dynamodb: {
            OldImage: image(r),
            NewImage: image(committed, { committed: 40, finalized_at_ms: now }),
            SequenceNumber: '1',
          },
        },
      ],
    } as unknown as DynamoDBStreamEvent;

    const from = written.length;
    const first = await handler(event);
    const again = await handler(event);

    // Each delivery publishes the ratio of what it saw settle, by unit (EMF).
    const ratios = written
      .slice(from)
      .join('')
      .split('\n')
      .filter((l) => l.includes('"EstimateRatio"'))
      .map((l) => JSON.parse(l) as Json);
    expect(ratios).toHaveLength(2);
    for (const doc of ratios) {
      expect(doc).toMatchObject({ EstimateRatio: 0.4, Unit: 'USD_MICROCENTS' });
      expect(JSON.stringify(doc._aws)).toContain('{"Name":"EstimateRatio","Unit":"None"}');
    }

    expect([first.batchItemFailures, again.batchItemFailures]).toEqual([[], []]);
    const body = await accuracyOnce(t, 1);
    expect(body.kinds).toEqual([
      expect.objectContaining({ kind: 'replayed', settled: 1, actual_total: usd(40) }),
    ]);
    // A third delivery of the same records as part of another batch is another transaction.
    await handler({ Records: [...event.Records, ...event.Records] } as DynamoDBStreamEvent);
    expect((await accuracyOnce(t, 3)).kinds).toEqual([
      expect.objectContaining({ kind: 'replayed', settled: 3 }),
    ]);
  });
});
