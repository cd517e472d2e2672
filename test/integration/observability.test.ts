import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { localClient } from '../../infra/local/dynamodb.js';
import { givenTenantWith, usd } from '../helpers/fixtures.js';
import { request } from '../helpers/http.js';
import { captureOutput, type Line } from '../helpers/output.js';
import { reservationsApi } from '../helpers/reservations.js';
import { useTestStack } from '../helpers/scaffold.js';

// Logs at info and EMF metrics on: this file reads both from the process's own stdout/stderr.
// Keys cached as deployed (5 s), so a request's DynamoDB calls are its operation's alone.
const stack = useTestStack({
  env: { LOG_LEVEL: 'info', POWERTOOLS_METRICS_DISABLED: 'false', API_KEY_CACHE_TTL_MS: '5000' },
});
const { reserve, commit, release, extend } = reservationsApi(stack);

// Everything the process writes is kept here instead of printed (test/helpers/output.ts).
const linesDuring = captureOutput();

/** The request's log lines (EMF documents carry its request id too, as metadata). */
const logLinesOf = (lines: Line[], requestId: string) =>
  lines.filter((l) => l.request_id === requestId && !('_aws' in l));
/** The request's EMF documents, by the name of their first metric. */
function emfOf(lines: Line[], requestId: string): Record<string, Line> {
  const docs = lines.filter((l) => l.request_id === requestId && '_aws' in l);
  return Object.fromEntries(
    docs.map((d) => {
      const directive = (d._aws as { CloudWatchMetrics: { Metrics: { Name: string }[] }[] })
        .CloudWatchMetrics[0];
      return [directive?.Metrics[0]?.Name ?? '', d];
    }),
  );
}

/** An EMF document as CloudWatch reads it: namespace, dimension sets, metrics and units. */
const emf = (
  dimensions: string[][],
  metrics: Record<string, 'Count' | 'Milliseconds' | 'None'>,
  values: Line,
) => ({
  _aws: {
    Timestamp: expect.any(Number),
    CloudWatchMetrics: [
      {
        Namespace: 'BudgetReservations',
        Dimensions: dimensions,
        Metrics: Object.entries(metrics).map(([Name, Unit]) => ({ Name, Unit })),
      },
    ],
  },
  service: 'budget-reservations',
  request_id: expect.any(String),
  ...values,
});

const requestIdOf = (res: { headers: Headers }) => res.headers.get('x-request-id') ?? '';

describe('request logs', () => {
  it('writes one line per request: id, route, method, status, tenant, key id, latency, DynamoDB calls and their timings; never the secret', async () => {
    const t = await givenTenantWith(stack, { '': 1_000 });
    const balances = `${stack.runtimeUrl}/v1/balances?tenant=${t.tenant}`;
    await request('GET', balances, { headers: t.headers }); // the route's cold start
    let requestId = '';

    const lines = await linesDuring(async () => {
      requestId = requestIdOf(await request('GET', balances, { headers: t.headers }));
    });

    expect(logLinesOf(lines, requestId)).toEqual([
      {
        level: 'INFO',
        message: 'request',
        timestamp: expect.any(String),
        service: 'budget-reservations',
        sampling_rate: 0,
        request_id: requestId,
        trace_id: expect.stringMatching(/^[0-9a-f]{32}$/),
        route: 'listBalances',
        method: 'GET',
        status: 200,
        tenant: t.tenant,
        key_id: t.keyId,
        latency_ms: expect.any(Number),
        dynamodb_calls: expect.any(Number),
        dynamodb_retries: 0,
        dynamodb_ms: expect.any(Number),
        dynamodb_ops: expect.any(Array),
        conflict_retries: 0,
      },
    ]);
    const [line = {}] = logLinesOf(lines, requestId);
    expect(line.dynamodb_calls).toBeGreaterThan(0);
    // Each call by operation and milliseconds: what the X-Ray subsegments used to show.
    const ops = line.dynamodb_ops as string[];
    expect(ops).toHaveLength(line.dynamodb_calls as number);
    for (const op of ops) expect(op).toMatch(/^[A-Za-z]+ \d+(\.\d)?$/);
    expect(line.dynamodb_ms).toBeGreaterThan(0);
    expect(JSON.stringify(lines)).not.toContain(t.key);
  });

  it('logs one read call at most before the one write of a reserve, commit, release and extend (3 scopes)', async () => {
    const t = await givenTenantWith(stack, {
      '': 10_000,
      'workspace:w': 10_000,
      'workspace:w/agent:a': 10_000,
    });
    const subject = { workspace: 'w', agent: 'a' };
    // The routes' cold starts (the tenant's state, cached afterwards).
    const warm = await reserve(t, { subject });
    await commit(t, warm.body.reservation_id, { actual: usd(50) });
    const callsOf = async (send: () => Promise<{ status: number; headers: Headers }>) => {
      let requestId = '';
      const lines = await linesDuring(async () => {
        const res = await send();
        expect(res.status).toBe(200);
        requestId = requestIdOf(res);
      });
      const [line = {}] = logLinesOf(lines, requestId);
      return (line.dynamodb_ops as string[]).map((op) => op.split(' ')[0]).sort();
    };
    const one = ['BatchGetItem', 'TransactWriteItems'];

    let id = '';
    expect(
      await callsOf(async () => {
        const res = await reserve(t, { subject });
        id = String(res.body.reservation_id);
        return res;
      }),
    ).toEqual(one);
    expect(await callsOf(() => extend(t, id, { extend_by_ms: 1_000 }))).toEqual(one);
    expect(await callsOf(() => commit(t, id, { actual: usd(80) }))).toEqual(one);
    const second = await reserve(t, { subject });
    expect(await callsOf(() => release(t, second.body.reservation_id))).toEqual(one);
  });

  it('logs a refusal with its error code and the key id, and never the secret', async () => {
    const t = await givenTenantWith(stack, { '': 100, 'workspace:w': 100 });
    let requestId = '';

    const lines = await linesDuring(async () => {
      requestId = requestIdOf(await reserve(t, { estimate: usd(500) }));
    });

    expect(logLinesOf(lines, requestId)).toEqual([
      expect.objectContaining({
        level: 'INFO',
        route: 'createReservation',
        method: 'POST',
        status: 409,
        error_code: 'BUDGET_EXCEEDED',
        tenant: t.tenant,
        key_id: t.keyId,
      }),
    ]);
    expect(JSON.stringify(lines)).not.toContain(t.key);
  });

  it('logs an unknown key as 401 UNAUTHORIZED with no key id and without the key it was given', async () => {
    let requestId = '';

    const lines = await linesDuring(async () => {
      const res = await request('GET', `${stack.runtimeUrl}/v1/balances?tenant=x`, {
        headers: { 'x-service-api-key': 'cyc_live_wrong' },
      });
      requestId = requestIdOf(res);
    });

    const [line] = logLinesOf(lines, requestId);
    expect(line).toMatchObject({ route: 'listBalances', status: 401, error_code: 'UNAUTHORIZED' });
    expect(line).not.toHaveProperty('key_id');
    expect(JSON.stringify(lines)).not.toContain('cyc_live_wrong');
  });
});

describe('EMF metrics', () => {
  it('publishes a reserve: latency by route, the decision, DynamoDB calls and retries', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    let requestId = '';

    const lines = await linesDuring(async () => {
      requestId = requestIdOf(await reserve(t, { estimate: usd(100) }));
    });

    const docs = emfOf(lines, requestId);
    expect(Object.keys(docs).sort()).toEqual(['DynamoDBCalls', 'Latency', 'Reservations']);
    expect(docs.Latency).toEqual(
      emf(
        [['service', 'Route']],
        { Latency: 'Milliseconds' },
        {
          Route: 'createReservation',
          Latency: expect.any(Number),
        },
      ),
    );
    expect(docs.Reservations).toEqual(
      emf(
        [['service', 'Decision']],
        { Reservations: 'Count' },
        {
          Decision: 'ALLOW',
          Reservations: 1,
        },
      ),
    );
    expect(docs.DynamoDBCalls).toEqual(
      emf(
        [['service']],
        {
          DynamoDBCalls: 'Count',
          DynamoDBRetries: 'Count',
          DynamoDBTime: 'Milliseconds',
          ConflictRetries: 'Count',
        },
        {
          DynamoDBCalls: expect.any(Number),
          DynamoDBRetries: 0,
          DynamoDBTime: expect.any(Number),
          ConflictRetries: 0,
        },
      ),
    );
  });

  it('publishes a refusal: the DENY decision and the refusal by reason code', async () => {
    const t = await givenTenantWith(stack, { '': 100, 'workspace:w': 100 });
    let requestId = '';

    const lines = await linesDuring(async () => {
      requestId = requestIdOf(await reserve(t, { estimate: usd(500) }));
    });

    const docs = emfOf(lines, requestId);
    expect(Object.keys(docs).sort()).toEqual([
      'DynamoDBCalls',
      'Latency',
      'Refusals',
      'Reservations',
    ]);
    expect(docs.Reservations).toEqual(
      emf(
        [['service', 'Decision']],
        { Reservations: 'Count' },
        {
          Decision: 'DENY',
          Reservations: 1,
        },
      ),
    );
    expect(docs.Refusals).toEqual(
      emf(
        [['service', 'Reason']],
        { Refusals: 'Count' },
        {
          Reason: 'BUDGET_EXCEEDED',
          Refusals: 1,
        },
      ),
    );
  });

  it('publishes a commit, and the overage it charged in the budget unit', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const held = await reserve(t, { estimate: usd(100), overage_policy: 'ALLOW_IF_AVAILABLE' });
    let requestId = '';

    const lines = await linesDuring(async () => {
      const res = await commit(t, held.body.reservation_id, { actual: usd(150) });
      expect(res.status).toBe(200);
      requestId = requestIdOf(res);
    });

    const docs = emfOf(lines, requestId);
    expect(Object.keys(docs).sort()).toEqual(['Commits', 'Latency', 'OverageCharged']);
    expect(docs.Commits).toEqual(
      emf(
        [['service']],
        {
          Commits: 'Count',
          DynamoDBCalls: 'Count',
          DynamoDBRetries: 'Count',
          DynamoDBTime: 'Milliseconds',
          ConflictRetries: 'Count',
        },
        {
          Commits: 1,
          DynamoDBCalls: expect.any(Number),
          DynamoDBRetries: 0,
          DynamoDBTime: expect.any(Number),
          ConflictRetries: 0,
        },
      ),
    );
    expect(docs.OverageCharged).toEqual(
      emf(
        [['service', 'Unit']],
        { OverageCharged: 'None' },
        {
          Unit: 'USD_MICROCENTS',
          OverageCharged: 50,
        },
      ),
    );
    expect(docs.Latency).toMatchObject({ Route: 'commitReservation' });
  });

  it('counts a replayed reserve as no new decision', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const first = await reserve(t, { idempotency_key: 'same', estimate: usd(100) });
    let requestId = '';

    const lines = await linesDuring(async () => {
      const again = await reserve(t, { idempotency_key: 'same', estimate: usd(100) });
      expect(again.body.reservation_id).toBe(first.body.reservation_id);
      requestId = requestIdOf(again);
    });

    expect(Object.keys(emfOf(lines, requestId)).sort()).toEqual(['DynamoDBCalls', 'Latency']);
  });
});

describe('DynamoDB contention', () => {
  it('counts the transactions sent again after a conflict on the request that sent them', async () => {
    const t = await givenTenantWith(stack, { '': 1_000_000 });
    const { dynamoClient } = await import('../../functions/store/client.js');
    const contention = await import('../../infra/local/contention.js');
    const emulator = contention.installContentionEmulator(dynamoClient);
    const ids: string[] = [];

    const lines = await linesDuring(async () => {
      try {
        await Promise.all(
          Array.from({ length: 16 }, async () => {
            for (let i = 0; i < 2; i++) {
              const res = await reserve(t, { subject: { tenant: t.tenant }, estimate: usd(10) });
              ids.push(requestIdOf(res));
            }
          }),
        );
      } finally {
        contention.uninstallContentionEmulator(dynamoClient);
      }
    });

    const logged = ids.flatMap((id) => logLinesOf(lines, id));
    const emitted = ids.map((id) => Number(emfOf(lines, id).DynamoDBCalls?.ConflictRetries ?? 0));
    const retries = logged.reduce((n, l) => n + Number(l.conflict_retries), 0);
    expect(emulator.counters.cancelledForConflict).toBeGreaterThan(0);
    expect(retries).toBeGreaterThan(0);
    expect(emitted.reduce((n, r) => n + r, 0)).toBe(retries);
    expect(logged).toHaveLength(32);
  });
});

describe('EMF metrics of the sweeper', () => {
  it('publishes each pass: the heartbeat, how late the oldest due reservation was, the expiries', async () => {
    const t = await givenTenantWith(stack, { '': 1_000, 'workspace:w': 1_000 });
    const held = await reserve(t, { estimate: usd(100), ttl_ms: 1_000, grace_period_ms: 0 });
    expect(held.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    const { sweepOnce } = await import('../../functions/jobs/expire-reservations.js');

    const lines = await linesDuring(() => sweepOnce());

    const [logLine] = lines.filter((l) => l.message === 'expired reservations');
    expect(logLine).toMatchObject({ level: 'INFO', expired: 1, lag_ms: expect.any(Number) });
    const docs = emfOf(lines, String(logLine?.sweep_id));
    expect(docs.Expiries).toEqual(
      emf(
        [['service']],
        {
          Expiries: 'Count',
          Sweeps: 'Count',
          SweepLag: 'Milliseconds',
          DynamoDBCalls: 'Count',
          DynamoDBRetries: 'Count',
          DynamoDBTime: 'Milliseconds',
          ConflictRetries: 'Count',
        },
        {
          Expiries: 1,
          Sweeps: 1,
          SweepLag: expect.any(Number),
          DynamoDBCalls: expect.any(Number),
          DynamoDBRetries: 0,
          DynamoDBTime: expect.any(Number),
          ConflictRetries: 0,
        },
      ),
    );
    expect(docs.Expiries?.SweepLag).toBeGreaterThanOrEqual(300);
  });
});

describe('GET /actuator/health', () => {
  it('answers 503 {"status":"DOWN"} on both servers when the table does not answer', async () => {
    const client = localClient(stack.dynamoEndpoint);
    await client.send(new DeleteTableCommand({ TableName: process.env.TABLE_NAME }));
    client.destroy();

    const runtime = await request('GET', `${stack.runtimeUrl}/actuator/health`);
    const admin = await request('GET', `${stack.adminUrl}/actuator/health`);

    expect([runtime.status, runtime.body]).toEqual([503, { status: 'DOWN' }]);
    expect([admin.status, admin.body]).toEqual([503, { status: 'DOWN' }]);
  });
});
