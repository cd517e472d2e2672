import { afterEach, describe, expect, it, vi } from 'vitest';

type Line = Record<string, unknown>;

/**
 * The telemetry modules as a function sees them with `env`: they read their configuration once,
 * at import, so each test imports a fresh copy.
 */
async function telemetryWith(env: Record<string, string>) {
  for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
  vi.resetModules();
  const invocation = await import('../../functions/telemetry/invocation.js');
  const { publishMetrics } = await import('../../functions/telemetry/metrics.js');
  return { ...invocation, publishMetrics };
}

/** The JSON lines written to stdout while `act` runs. */
async function stdoutDuring(act: () => unknown): Promise<Line[]> {
  const chunks: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    chunks.push(String(chunk));
    return true;
  });
  try {
    await act();
  } finally {
    spy.mockRestore();
  }
  return chunks
    .join('')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);
}

type Directive = { Dimensions: string[][]; Metrics: { Name: string }[] };
const directiveOf = (doc: Line | undefined) =>
  (doc?._aws as { CloudWatchMetrics: Directive[] } | undefined)?.CloudWatchMetrics[0];
const dimensionsOf = (doc: Line | undefined) => directiveOf(doc)?.Dimensions;

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('EMF dimensions', () => {
  it('never makes the tenant a dimension by default', async () => {
    const t = await telemetryWith({ POWERTOOLS_METRICS_DISABLED: 'false' });

    const docs = await stdoutDuring(() =>
      t.runInvocation('req-1', (invocation) => {
        invocation.tenant = 'acme';
        t.recordMetric('Reservations', 1, { Decision: 'ALLOW' });
        t.publishMetrics(invocation);
      }),
    );

    expect(docs).toHaveLength(1);
    expect(dimensionsOf(docs[0])).toEqual([['service', 'Decision']]);
    expect(docs[0]).not.toHaveProperty('Tenant');
  });

  it('adds a Tenant dimension set to per-tenant metrics with METRICS_TENANT_DIMENSION, beside the one without', async () => {
    const t = await telemetryWith({
      POWERTOOLS_METRICS_DISABLED: 'false',
      METRICS_TENANT_DIMENSION: 'true',
    });

    const docs = await stdoutDuring(() =>
      t.runInvocation('req-2', (invocation) => {
        invocation.tenant = 'acme';
        t.recordMetric('Reservations', 1, { Decision: 'ALLOW' });
        t.recordMetric('Commits', 1, {});
        t.recordMetric('Latency', 12, { Route: 'createReservation' });
        t.publishMetrics(invocation);
      }),
    );

    const byMetric = Object.fromEntries(docs.map((d) => [directiveOf(d)?.Metrics[0]?.Name, d]));
    expect(dimensionsOf(byMetric.Reservations)).toEqual([
      ['service', 'Decision'],
      ['service', 'Decision', 'Tenant'],
    ]);
    expect(byMetric.Reservations).toMatchObject({ Tenant: 'acme', Decision: 'ALLOW' });
    expect(dimensionsOf(byMetric.Commits)).toEqual([['service'], ['service', 'Tenant']]);
    // Latency is not a per-tenant metric: routes stay its only dimension.
    expect(dimensionsOf(byMetric.Latency)).toEqual([['service', 'Route']]);
    expect(byMetric.Latency).not.toHaveProperty('Tenant');
  });

  it('writes a metric recorded twice with the same dimensions as one document with both values', async () => {
    const t = await telemetryWith({ POWERTOOLS_METRICS_DISABLED: 'false' });

    const docs = await stdoutDuring(() =>
      t.runInvocation('req-6', (invocation) => {
        t.recordMetric('Expiries', 1, {});
        t.recordMetric('Expiries', 2, {});
        t.publishMetrics(invocation);
      }),
    );

    expect(docs).toEqual([
      {
        _aws: {
          Timestamp: expect.any(Number),
          CloudWatchMetrics: [
            {
              Namespace: 'BudgetReservations',
              Dimensions: [['service']],
              Metrics: [{ Name: 'Expiries', Unit: 'Count' }],
            },
          ],
        },
        service: 'budget-reservations',
        Expiries: [1, 2],
        request_id: 'req-6',
      },
    ]);
  });

  it('writes nothing with POWERTOOLS_METRICS_DISABLED, as the test stacks run', async () => {
    const t = await telemetryWith({ POWERTOOLS_METRICS_DISABLED: 'true' });

    const docs = await stdoutDuring(() =>
      t.runInvocation('req-3', (invocation) => {
        t.recordMetric('Commits', 1, {});
        t.publishMetrics(invocation);
      }),
    );

    expect(docs).toEqual([]);
  });
});

describe('invocation scope', () => {
  it('counts each concurrent invocation on its own, and nothing outside one', async () => {
    const t = await telemetryWith({});
    const tick = () => new Promise((resolve) => setTimeout(resolve, 1));
    const calls = (n: number) =>
      t.runInvocation(`req-${n}`, async (invocation) => {
        for (let i = 0; i < n; i++) {
          await tick();
          t.noteDynamoCall(i === 0 ? 3 : 1);
          t.noteConflictRetry();
        }
        return invocation;
      });

    t.noteDynamoCall(1);
    const [two, five] = await Promise.all([calls(2), calls(5)]);

    expect([two.dynamoCalls, two.dynamoRetries, two.conflictRetries]).toEqual([2, 2, 2]);
    expect([five.dynamoCalls, five.dynamoRetries, five.conflictRetries]).toEqual([5, 2, 5]);
    expect(t.currentInvocation()).toBeUndefined();
  });
});

describe('DynamoDB call timings', () => {
  it('reports each call by operation and milliseconds, and their total, for the log line', async () => {
    const t = await telemetryWith({});

    const fields = t.runInvocation('req-4', (invocation) => {
      t.noteDynamoCall(1, 'GetItemCommand', 3.14);
      t.noteDynamoCall(2, 'TransactWriteItemsCommand', 20.06);
      return t.dynamoFields(invocation);
    });

    expect(fields).toEqual({
      dynamodb_calls: 2,
      dynamodb_retries: 1,
      dynamodb_ms: 23.2,
      dynamodb_ops: ['GetItem 3.1', 'TransactWriteItems 20.1'],
      conflict_retries: 0,
    });
  });

  it('keeps the first 20 calls of a long invocation (a sweep pass), and counts them all', async () => {
    const t = await telemetryWith({});

    const fields = t.runInvocation('req-5', (invocation) => {
      for (let i = 0; i < 25; i++) t.noteDynamoCall(1, 'QueryCommand', 1);
      return t.dynamoFields(invocation);
    });

    expect(fields.dynamodb_calls).toBe(25);
    expect(fields.dynamodb_ops).toHaveLength(20);
    expect(fields.dynamodb_ms).toBe(25);
  });
});
