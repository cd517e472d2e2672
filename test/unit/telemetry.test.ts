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

describe('X-Ray tracing', () => {
  it('is not loaded unless POWERTOOLS_TRACE_ENABLED is set', async () => {
    vi.resetModules();

    const { tracing } = await import('../../functions/telemetry/tracing.js');

    expect(tracing).toBeUndefined();
  });

  it('in Lambda with POWERTOOLS_TRACE_ENABLED, records DynamoDB calls as subsegments', async () => {
    vi.stubEnv('POWERTOOLS_TRACE_ENABLED', 'true');
    vi.stubEnv('AWS_EXECUTION_ENV', 'AWS_Lambda_nodejs22.x');
    vi.resetModules();

    const { tracing } = await import('../../functions/telemetry/tracing.js');
    const { dynamoClient } = await import('../../functions/store/client.js');

    expect(tracing?.tracer.isTracingEnabled()).toBe(true);
    expect(dynamoClient.middlewareStack.identify().join('\n')).toMatch(/XRay/i);
  });
});
