import { type ChildProcess, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../infra/local/dynamodb.js';
import { type Json, request } from '../helpers/http.js';
import { spawnRunner, untilHealthy } from '../helpers/runner.js';

// The runner in a process of its own, persisted under a unique directory that DynamoDB Local
// (and its watchdog) name on their command lines.
const dataDir = mkdtempSync(join(tmpdir(), 'brs-durability-'));
const runners: ChildProcess[] = [];

afterAll(async () => {
  await Promise.all(runners.map(stop));
  for (const pid of storePids()) kill(pid, 'SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

const CLIENTS = 4;
const LOAD_MS = 2_000;
const UNIT = 'USD_MICROCENTS';
const ADMIN = { 'x-admin-api-key': 'durability-admin' };

/** DynamoDB Local and its watchdog; `jar` only the Java process. */
function storePids(only?: 'jar'): number[] {
  return execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes(dataDir) && (only !== 'jar' || l.includes('DynamoDBLocal.jar')))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
}

function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

async function startRunner(runtimePort: number, adminPort: number): Promise<ChildProcess> {
  const runner = spawnRunner({
    DATA_DIR: dataDir,
    RUNTIME_PORT: String(runtimePort),
    ADMIN_PORT: String(adminPort),
    ADMIN_API_KEY: ADMIN['x-admin-api-key'],
    TABLE_NAME: 'durability-table',
    LOG_LEVEL: 'silent',
    EXPIRY_SWEEP_INTERVAL_MS: '600000',
  });
  runners.push(runner.child);
  await untilHealthy(runner, { runtime: runtimePort, admin: adminPort });
  return runner.child;
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
  });
}

/** One client operation: reserve, then commit the reservation, each with its idempotency key. */
interface Op {
  readonly key: string;
  readonly estimate: number;
  readonly actual: number;
  /** The reservation id the service answered (a reserve it acknowledged). */
  reservationId?: string;
  commitAcknowledged?: boolean;
}

// Each test starts whole runners (Node, Java): on a loaded machine one start-up alone can take 20 s.
describe('the embedded store under a hard kill', { timeout: 150_000 }, () => {
  it('client retries with their idempotency keys reconcile what a SIGKILL of DynamoDB Local lost', async () => {
    const [runtimePort, adminPort] = [await freePort(), await freePort()];
    const runtime = `http://127.0.0.1:${runtimePort}`;
    const admin = `http://127.0.0.1:${adminPort}`;
    let runner = await startRunner(runtimePort, adminPort);

    const tenant = 'durable';
    await request('POST', `${admin}/v1/admin/tenants`, {
      headers: ADMIN,
      body: { tenant_id: tenant, name: 'Durable' },
    });
    const key = await request('POST', `${admin}/v1/admin/api-keys`, {
      headers: ADMIN,
      body: { tenant_id: tenant, name: 'clients' },
    });
    const headers = { 'x-service-api-key': String(key.body.key_secret) };
    const allocated = 1_000_000_000;
    const budget = await request('POST', `${admin}/v1/admin/budgets`, {
      headers,
      body: { scope: `tenant:${tenant}`, unit: UNIT, allocated: { unit: UNIT, amount: allocated } },
    });
    expect(budget.status).toBe(201);

    const reserve = (op: Op) =>
      request('POST', `${runtime}/v1/reservations`, {
        headers,
        body: {
          idempotency_key: op.key,
          subject: { tenant },
          action: { kind: 'llm.completion', name: 'model-x' },
          estimate: { unit: UNIT, amount: op.estimate },
          ttl_ms: 3_600_000,
        },
      });
    const commit = (op: Op, id: string) =>
      request('POST', `${runtime}/v1/reservations/${id}/commit`, {
        headers,
        body: { idempotency_key: `${op.key}-commit`, actual: { unit: UNIT, amount: op.actual } },
      });

    // Load: each client reserves then commits, op after op, until its first failure.
    const ops: Op[][] = Array.from({ length: CLIENTS }, () => []);
    let loading = true;
    const client = async (c: number) => {
      for (let i = 0; loading; i++) {
        const op: Op = {
          key: `c${c}-op${i}`,
          estimate: 1_000 + i,
          actual: 100 + ((7 * c + i) % 500),
        };
        ops[c]?.push(op);
        try {
          const reserved = await reserve(op);
          if (reserved.status !== 200) return;
          op.reservationId = String(reserved.body.reservation_id);
          const committed = await commit(op, op.reservationId);
          if (committed.status !== 200) return;
          op.commitAcknowledged = true;
        } catch {
          return; // the store is gone: the runner answers 500, or the socket broke
        }
      }
    };
    const clients = Array.from({ length: CLIENTS }, (_, c) => client(c));
    await new Promise((r) => setTimeout(r, LOAD_MS));
    const [java] = storePids('jar');
    expect(java).toBeDefined();
    kill(java ?? -1, 'SIGKILL');
    await Promise.all(clients);
    loading = false;
    await stop(runner);
    runner = await startRunner(runtimePort, adminPort);

    // Measure: which acknowledged writes did the restarted store lose?
    const all = ops.flat();
    const acknowledged = all.filter((op) => op.reservationId !== undefined);
    const lost = { reserves: 0, commits: 0 };
    for (const op of acknowledged) {
      const found = await request('GET', `${runtime}/v1/reservations/${op.reservationId}`, {
        headers,
      });
      if (found.status === 404) lost.reserves++;
      else if (op.commitAcknowledged && found.body.status !== 'COMMITTED') lost.commits++;
    }
    const commitsAcknowledged = all.filter((op) => op.commitAcknowledged).length;
    console.info(
      `durability: ${all.length} operations sent, ${acknowledged.length} reserves and ${commitsAcknowledged} commits acknowledged; after SIGKILL of DynamoDB Local, ${lost.reserves} reserves and ${lost.commits} commits of those were lost`,
    );
    expect(acknowledged.length).toBeGreaterThan(0);

    // Reconcile: every client retries every operation it sent, same keys and payloads, in order.
    await Promise.all(
      ops.map(async (mine) => {
        for (const op of mine) {
          const reserved = await reserve(op);
          expect(reserved.status).toBe(200);
          const id = String(reserved.body.reservation_id);
          if (op.reservationId !== undefined) expect(id).toBe(op.reservationId);
          op.reservationId = id;
          const committed = await commit(op, id);
          expect(committed.status).toBe(200);
          expect(committed.body).toMatchObject({
            status: 'COMMITTED',
            charged: { amount: op.actual },
          });
        }
      }),
    );

    // Audit: each reservation COMMITTED once, at its actual; the ledger adds up.
    const listed: Json[] = [];
    let cursor: string | undefined;
    do {
      const page = await request<{ reservations: Json[]; next_cursor?: string }>(
        'GET',
        `${runtime}/v1/reservations?tenant=${tenant}&limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        { headers },
      );
      listed.push(...page.body.reservations);
      cursor = page.body.next_cursor;
    } while (cursor);
    const byId = new Map(listed.map((r) => [String(r.reservation_id), r]));
    expect(byId.size).toBe(all.length);
    expect(listed.length).toBe(all.length);
    for (const op of all) {
      expect(byId.get(String(op.reservationId))).toMatchObject({
        status: 'COMMITTED',
        idempotency_key: op.key,
        committed: { unit: UNIT, amount: op.actual },
      });
    }
    const balances = await request<{ balances: Record<string, { amount: number }>[] }>(
      'GET',
      `${runtime}/v1/balances?tenant=${tenant}`,
      { headers },
    );
    const [ledger] = balances.body.balances;
    const amount = (field: string) => ledger?.[field]?.amount ?? Number.NaN;
    const spent = all.reduce((sum, op) => sum + op.actual, 0);
    expect({
      allocated: amount('allocated'),
      spent: amount('spent'),
      reserved: amount('reserved'),
      debt: amount('debt'),
    }).toEqual({ allocated, spent, reserved: 0, debt: 0 });
    expect(amount('allocated') - amount('spent') - amount('reserved') - amount('debt')).toBe(
      amount('remaining'),
    );

    await stop(runner);
  });
});
