import { type ChildProcess, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { freePort } from '../../infra/local/dynamodb.js';
import { request } from '../helpers/http.js';
import { type SpawnedRunner, spawnRunner, untilHealthy } from '../helpers/runner.js';

// `npm start` as a user runs it: a separate process with DynamoDB Local persisted on disk.
const dataDir = mkdtempSync(join(tmpdir(), 'brs-restart-'));
const children: ChildProcess[] = [];

afterAll(async () => {
  // SIGTERM, not SIGKILL: the runner must get to stop its DynamoDB Local (a Java grandchild).
  await Promise.all(children.filter((c) => c.exitCode === null && c.signalCode === null).map(stop));
  rmSync(dataDir, { recursive: true, force: true });
});

function launch(args: string[], env: Record<string, string>): SpawnedRunner {
  const spawned = spawnRunner(env, { args });
  children.push(spawned.child);
  return spawned;
}

/** A runner on disk (DATA_DIR), once both servers answer their health check. */
async function startRunner(runtimePort: number, adminPort: number): Promise<SpawnedRunner> {
  const started = launch([], {
    DATA_DIR: dataDir,
    RUNTIME_PORT: String(runtimePort),
    ADMIN_PORT: String(adminPort),
    ADMIN_API_KEY: 'restart-admin',
    TABLE_NAME: 'restart-table',
    LOG_LEVEL: 'warn',
  });
  await untilHealthy(started, { runtime: runtimePort, admin: adminPort });
  return started;
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}

const javaProcessesFor = (dir: string): string[] => {
  const out = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' });
  return out.split('\n').filter((line) => line.includes('DynamoDBLocal') && line.includes(dir));
};

// Each test starts whole runners (Node, Java): on a loaded machine one start-up alone can take 20 s.
describe('npm start', { timeout: 150_000 }, () => {
  it('keeps tenants, keys and budgets across a restart, and leaves no Java process behind', async () => {
    const [runtimePort, adminPort] = [await freePort(), await freePort()];
    const first = await startRunner(runtimePort, adminPort);
    const admin = `http://127.0.0.1:${adminPort}`;
    const headers = { 'x-admin-api-key': 'restart-admin' };
    await request('POST', `${admin}/v1/admin/tenants`, {
      headers,
      body: { tenant_id: 'keeper', name: 'Keeper' },
    });
    const key = await request('POST', `${admin}/v1/admin/api-keys`, {
      headers,
      body: { tenant_id: 'keeper', name: 'k' },
    });
    const secret = String(key.body.key_secret);
    await request('POST', `${admin}/v1/admin/budgets`, {
      headers: { 'x-service-api-key': secret },
      body: { scope: 'tenant:keeper', unit: 'TOKENS', allocated: { unit: 'TOKENS', amount: 777 } },
    });

    await request('POST', `${admin}/v1/admin/budgets`, {
      headers: { 'x-service-api-key': secret },
      body: { scope: 'tenant:keeper', unit: 'CREDITS', allocated: { unit: 'CREDITS', amount: 1 } },
    });
    const firstPage = await request<{ next_cursor?: string }>(
      'GET',
      `http://127.0.0.1:${runtimePort}/v1/balances?tenant=keeper&limit=1`,
      { headers: { 'x-service-api-key': secret } },
    );

    expect(await stop(first.child)).toBe(0);
    expect(javaProcessesFor(dataDir)).toEqual([]);
    const second = await startRunner(runtimePort, adminPort);
    // The cursor secret was generated once, kept in the data directory for its owner only.
    const kept = statSync(join(dataDir, 'cursor-secret'));
    const secondPage = await request<{ balances: unknown[] }>(
      'GET',
      `http://127.0.0.1:${runtimePort}/v1/balances?tenant=keeper&limit=1&cursor=${encodeURIComponent(String(firstPage.body.next_cursor))}`,
      { headers: { 'x-service-api-key': secret } },
    );
    expect(kept.mode & 0o777).toBe(0o600);
    expect(secondPage.status).toBe(200);
    expect(secondPage.body.balances).toHaveLength(1);

    const tenantAgain = await request('POST', `${admin}/v1/admin/tenants`, {
      headers,
      body: { tenant_id: 'keeper', name: 'Keeper' },
    });
    const balances = await request<{ balances: { allocated: { amount: number } }[] }>(
      'GET',
      `http://127.0.0.1:${runtimePort}/v1/balances?tenant=keeper`,
      { headers: { 'x-service-api-key': secret } },
    );
    expect(tenantAgain.status).toBe(409);
    expect(balances.status).toBe(200);
    expect(balances.body.balances.map((b) => b.allocated.amount).sort()).toEqual([1, 777]);
    expect(await stop(second.child)).toBe(0);
    expect(javaProcessesFor(dataDir)).toEqual([]);
  });

  it('exits non-zero with one clear line when a port is taken', async () => {
    const runtimePort = await freePort();
    const blocker = (await import('node:net')).createServer().listen(runtimePort, '127.0.0.1');
    const adminPort = await freePort();

    const runner = launch(['--in-memory'], {
      RUNTIME_PORT: String(runtimePort),
      ADMIN_PORT: String(adminPort),
    });
    const code = await runner.exited;
    blocker.close();

    expect(code).not.toBe(0);
    expect(runner.stderr()).toContain(`port ${runtimePort} is already in use`);
  });

  it('exits non-zero with one clear line when Java is missing', async () => {
    const runner = launch(['--in-memory'], { PATH: '/nonexistent' });
    const code = await runner.exited;

    expect(code).toBe(1);
    expect(
      runner
        .stderr()
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('error:')),
    ).toEqual([expect.stringContaining('Java 17+ is required')]);
  });

  it('exits with one clear line when DYNAMODB_ENDPOINT does not answer', async () => {
    const runner = launch([], { DYNAMODB_ENDPOINT: `http://127.0.0.1:${await freePort()}` });
    const code = await runner.exited;

    expect(code).toBe(1);
    const errors = runner
      .stderr()
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('error:'));
    expect(errors).toEqual([
      expect.stringMatching(
        /^error: cannot reach DynamoDB at http:\/\/127\.0\.0\.1:\d+ \(DYNAMODB_ENDPOINT\): nothing listens there \(connection refused\)\. .*unset DYNAMODB_ENDPOINT/,
      ),
    ]);
  });

  it('binds the address HOST names, warns when it is not loopback, and says what it runs on', async () => {
    const [runtimePort, adminPort] = [await freePort(), await freePort()];
    const runner = launch(['--in-memory'], {
      // The suite's DynamoDB Local: no second JVM for this test.
      DYNAMODB_ENDPOINT: inject('dynamoEndpoint'),
      TABLE_NAME: 'host-table',
      HOST: '0.0.0.0',
      RUNTIME_PORT: String(runtimePort),
      ADMIN_PORT: String(adminPort),
    });
    await untilHealthy(runner, { runtime: runtimePort, admin: adminPort });
    // The servers answer before the banner is printed (after the stream consumer starts).
    await vi.waitFor(() => expect(runner.output()).toContain('  bootstrap: '), { timeout: 10_000 });
    const banner = runner.output();
    expect(banner).toContain(`DynamoDB at ${inject('dynamoEndpoint')} (DYNAMODB_ENDPOINT)`);
    expect(banner).toContain('in-memory ignored: DYNAMODB_ENDPOINT is set');
    expect(banner).toContain('warning: HOST=0.0.0.0 serves both servers beyond this machine');
    expect(banner).toContain(`admin server:   http://127.0.0.1:${adminPort}`);
    // Metrics are off locally: the only lines after the banner are the requests' own.
    expect(banner).toContain('metrics off (POWERTOOLS_METRICS_DISABLED=false');
    expect(banner).not.toContain('"_aws"');
    // Reachable on the machine's other addresses too (where it has one).
    const external = Object.values(networkInterfaces())
      .flat()
      .find((i) => i?.family === 'IPv4' && !i.internal)?.address;
    if (external) {
      const health = await request('GET', `http://${external}:${adminPort}/actuator/health`);
      expect(health.status).toBe(200);
    }
    expect(await stop(runner.child)).toBe(0);
  });
});
