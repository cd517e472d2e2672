import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { givenBudget, givenTenant } from '../helpers/fixtures.js';
import { request } from '../helpers/http.js';
import { useTestStack } from '../helpers/scaffold.js';

const stack = useTestStack();

describe('POST /v1/decide', () => {
  it('answers one request sent 10 times at once with one key identically, and records it once', async () => {
    const t = await givenTenant(stack);
    await givenBudget(stack, t, 'workspace:w', 1_000);
    await givenBudget(stack, t, '', 1_000);
    const body = {
      idempotency_key: randomUUID(),
      subject: { workspace: 'w' },
      action: { kind: 'llm', name: 'm' },
      estimate: { unit: 'USD_MICROCENTS', amount: 10 },
    };

    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        request('POST', `${stack.runtimeUrl}/v1/decide`, { headers: t.headers, body }),
      ),
    );
    const mismatch = await request('POST', `${stack.runtimeUrl}/v1/decide`, {
      headers: t.headers,
      body: { ...body, estimate: { unit: 'USD_MICROCENTS', amount: 11 } },
    });

    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    for (const r of results) expect(r.body).toEqual(results[0]?.body);
    expect(mismatch.status).toBe(409);
  });

  it('finds the winning record when its conditional put loses (PutItem ALL_OLD on DynamoDB Local)', async () => {
    const { putIdempotencyRecord } = await import('../../functions/store/idempotency.js');
    const scope = { tenant: 't', operation: 'decide', key: randomUUID() };
    const first = { fingerprint: 'f1', result: { refusal: 'BUDGET_EXCEEDED', affectedScopes: [] } };

    const won = await putIdempotencyRecord(scope, first, Date.now());
    const lost = await putIdempotencyRecord(scope, { ...first, fingerprint: 'f2' }, Date.now());

    expect(won).toEqual({ kind: 'written' });
    expect(lost).toEqual({
      kind: 'duplicate',
      stored: { fingerprint: 'f1', result: { form: 'whole', value: first.result } },
    });
  });
});
