// GET /v1/admin/overview against a growing directory (issue 27 point 1): the overview reads a
// fixed number of items (8 counters, 4 + 4 recent-activity partitions, the debt watch), so its
// latency must not grow with the tenants. Against a running admin server:
//
//   ADMIN_API_KEY=k npm start -- --in-memory        # another terminal
//   ADMIN_URL=http://127.0.0.1:7979 ADMIN_API_KEY=k npx tsx test/bench/overview-scale.ts 10000
//
// It measures the overview, seeds tenants through the API (one budget for every tenth, so the
// budget counters move too) up to the count, and measures again. Printed, never asserted.

const admin = process.env.ADMIN_URL ?? 'http://127.0.0.1:7979';
const key = process.env.ADMIN_API_KEY ?? '';
const target = Number(process.argv[2] ?? 10_000);
const SAMPLES = 200;
const CONCURRENCY = 8;
const headers = { 'content-type': 'application/json', 'X-Admin-API-Key': key };

async function call(method: string, path: string, body?: unknown): Promise<Response> {
  const res = await fetch(`${admin}${path}`, {
    method,
    headers,
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  if (res.status >= 300 && res.status !== 409) {
    throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  }
  return res;
}

async function measure(label: string): Promise<void> {
  const times: number[] = [];
  let tenants = 0;
  for (let i = 0; i < SAMPLES; i++) {
    const start = performance.now();
    const res = await call('GET', '/v1/admin/overview');
    const body = (await res.json()) as { tenant_counts: { total: number } };
    times.push(performance.now() - start);
    tenants = body.tenant_counts.total;
  }
  times.sort((a, b) => a - b);
  const at = (q: number) =>
    (times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0).toFixed(1);
  console.log(
    `${label}: ${tenants} tenants; GET /v1/admin/overview × ${SAMPLES} sequential: p50 ${at(0.5)} ms, p95 ${at(0.95)} ms, p99 ${at(0.99)} ms`,
  );
}

async function seed(): Promise<void> {
  const run = Date.now().toString(36);
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= target) return;
      const tenant = `ov-${run}-${i}`;
      await call('POST', '/v1/admin/tenants', { tenant_id: tenant, name: `Overview ${i}` });
      if (i % 10 === 0) {
        await call('POST', '/v1/admin/budgets', {
          tenant_id: tenant,
          scope: `tenant:${tenant}`,
          unit: 'USD_MICROCENTS',
          allocated: { unit: 'USD_MICROCENTS', amount: 1_000_000 },
        });
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  console.log(`seeded ${target} tenants in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

await measure('before');
await seed();
await measure('after');
