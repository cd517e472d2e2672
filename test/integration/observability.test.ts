import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it, vi } from 'vitest';
import { localClient } from '../../infra/local/dynamodb.js';
import { givenBudget, givenTenant } from '../helpers/fixtures.js';
import { request } from '../helpers/http.js';
import { useTestStack } from '../helpers/scaffold.js';

const stack = useTestStack({ env: { LOG_LEVEL: 'info' } });

/** The JSON lines the process writes to stdout while `act` runs. */
async function logLinesDuring(act: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
  const lines: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  try {
    await act();
  } finally {
    spy.mockRestore();
  }
  return lines
    .join('')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('request logs', () => {
  it('writes one structured JSON line per request, with its request id, route, status, latency and tenant, and no secret', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, '', 1_000);
    let requestId = '';

    const lines = await logLinesDuring(async () => {
      const res = await request('GET', `${stack.runtimeUrl}/v1/balances?tenant=${t.tenant}`, {
        headers: t.headers,
      });
      requestId = res.headers.get('x-request-id') ?? '';
    });

    const mine = lines.filter((l) => l.request_id === requestId);
    expect(mine).toEqual([
      {
        level: 'info',
        time: expect.any(String),
        message: 'request',
        request_id: requestId,
        route: 'listBalances',
        status: 200,
        latency_ms: expect.any(Number),
        tenant: t.tenant,
      },
    ]);
    expect(JSON.stringify(lines)).not.toContain(t.key);
  });

  it('logs refusals too, with their status', async () => {
    let requestId = '';

    const lines = await logLinesDuring(async () => {
      const res = await request('GET', `${stack.runtimeUrl}/v1/balances?tenant=x`, {
        headers: { 'x-service-api-key': 'cyc_live_wrong' },
      });
      requestId = res.headers.get('x-request-id') ?? '';
    });

    expect(lines.filter((l) => l.request_id === requestId)).toEqual([
      expect.objectContaining({ route: 'listBalances', status: 401 }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('cyc_live_wrong');
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
