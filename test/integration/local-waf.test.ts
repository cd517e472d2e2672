import { beforeEach, describe, expect, it } from 'vitest';
import { testClock } from '../helpers/clock.js';
import { adminHeaders, givenClosableTenant } from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { captureOutput } from '../helpers/output.js';
import { useTestStack } from '../helpers/scaffold.js';

// The edge's WAF rules, emulated in front of the local servers (issue 25 point 4;
// infra/local/waf.ts), through the sockets. Every request of this file comes from 127.0.0.1,
// fixtures included, so the per-source limit is set above what one test sends.
const PER_KEY = 10;
const PER_SOURCE = 80;
const MINUTE = 60_000;
const clock = testClock({ frozen: true });
const stack = useTestStack({
  clock,
  env: {
    LOG_LEVEL: 'info',
    LOCAL_WAF: 'true',
    LOCAL_WAF_KEY_RATE_PER_MINUTE: String(PER_KEY),
    LOCAL_WAF_SOURCE_RATE_PER_MINUTE: String(PER_SOURCE),
  },
});
const linesDuring = captureOutput();

beforeEach(() => {
  // Two windows on: neither this minute's count nor the last one's remains.
  clock.advanceTo((Math.floor(clock.now() / MINUTE) + 2) * MINUTE);
});

/** The edge's answer: SPEC's body naming the edge, and no function ran (no request log line). */
async function expectEdgeAnswer(
  send: () => Promise<{ status: number; headers: Headers; body: Json }>,
  status: number,
  error: string,
) {
  let res: Awaited<ReturnType<typeof send>> | undefined;
  const lines = await linesDuring(async () => {
    res = await send();
  });
  expect(res?.status).toBe(status);
  expect(res?.body).toEqual({ error, message: expect.any(String), request_id: 'edge' });
  expect(lines.filter((l) => l.msg === 'request' || l.message === 'request')).toEqual([]);
  return res;
}

const introspect = (headers: Record<string, string>) =>
  request('GET', `${stack.runtimeUrl}/v1/auth/introspect`, { headers });

describe('the emulated edge (LOCAL_WAF)', () => {
  it('answers a runtime call without a key of our shape 401 before any function runs', async () => {
    await expectEdgeAnswer(() => introspect({}), 401, 'UNAUTHORIZED');
    await expectEdgeAnswer(
      () => introspect({ 'x-cycles-api-key': 'garbage' }),
      401,
      'UNAUTHORIZED',
    );
    await expectEdgeAnswer(
      () => introspect({ 'x-service-api-key': `cyc_live_${'!'.repeat(32)}` }),
      401,
      'UNAUTHORIZED',
    );
    // A key of our shape, the operator's key, and the public routes pass to the functions.
    const shaped = await introspect({ 'x-cycles-api-key': `cyc_live_${'A'.repeat(32)}` });
    expect(shaped.status).toBe(401);
    expect(shaped.body.request_id).not.toBe('edge');
    const health = await request('GET', `${stack.runtimeUrl}/actuator/health`);
    expect(health.status).toBe(200);
    const operator = await request('GET', `${stack.runtimeUrl}/v1/reservations?tenant=nobody`, {
      headers: adminHeaders,
    });
    expect(operator.body.request_id).not.toBe('edge');
    // The admin API is not under the key-format rule: its functions answer.
    const admin = await request('GET', `${stack.adminUrl}/v1/admin/tenants`);
    expect(admin.status).toBe(401);
    expect(admin.body.request_id).not.toBe('edge');
  });

  it('limits one API key per minute with 429 and Retry-After, other keys untouched', async () => {
    const t = await givenClosableTenant(stack);
    const other = await givenClosableTenant(stack);
    for (let i = 0; i < PER_KEY; i++) expect((await introspect(t.headers)).status).toBe(200);
    const refused = await expectEdgeAnswer(() => introspect(t.headers), 429, 'LIMIT_EXCEEDED');
    expect(refused?.headers.get('retry-after')).toBe('60');
    // The same key in the other header is counted apart, as WAF's two rules do.
    expect((await introspect({ 'x-cycles-api-key': t.key })).status).toBe(200);
    expect((await introspect(other.headers)).status).toBe(200);
    // Still blocked while the trailing minute is over the limit; free two windows on.
    clock.advance(MINUTE);
    await expectEdgeAnswer(() => introspect(t.headers), 429, 'LIMIT_EXCEEDED');
    clock.advance(MINUTE);
    expect((await introspect(t.headers)).status).toBe(200);
  });

  it('limits one source address across both servers, whatever its keys', async () => {
    const t = await givenClosableTenant(stack); // 2 requests of this source
    let sent = 2;
    while (sent < PER_SOURCE) {
      // Garbage keys: blocked by the key-format rule, counted by the per-source one.
      const res = await introspect({ 'x-cycles-api-key': `bad-${sent}` });
      expect(res.status).toBe(401);
      sent++;
    }
    await expectEdgeAnswer(() => introspect(t.headers), 429, 'LIMIT_EXCEEDED');
    await expectEdgeAnswer(
      () => request('GET', `${stack.adminUrl}/v1/admin/tenants`, { headers: adminHeaders }),
      429,
      'LIMIT_EXCEEDED',
    );
  });
});
