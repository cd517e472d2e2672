import { randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Server } from '../../functions/routes.js';
import { buildCli, type CliOptions, type CliRun, finished, startCli } from '../helpers/cli.js';
import { reserveBody } from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { documentProblem } from '../helpers/openapi.js';
import { eventually, type Receiver, startReceiver } from '../helpers/receiver.js';
import { useTestStack } from '../helpers/scaffold.js';
import { ADMIN_KEY } from '../helpers/stack.js';

// Issue 30 § 2-4: the CLI as a process against the local stack. Every command, its --json
// (the API's own bodies, checked against the OpenAPI documents), the exit code of each error
// class, bulk files retried, profiles and the environment, and no key ever echoed.

// Events on: the events and webhooks commands read the log and make deliveries.
const stack = useTestStack({ env: { EVENTS_ENABLED: 'true', STREAM_POLL_INTERVAL_MS: '100' } });
let cli: Awaited<ReturnType<typeof buildCli>>;
let home: string;
/** Everything every run printed, for the check that no key is ever echoed. */
const transcript: { args: readonly string[]; text: string }[] = [];

beforeAll(async () => {
  cli = await buildCli();
  home = await mkdtemp(join(tmpdir(), 'cli-home-'));
});
afterAll(async () => {
  await cli?.remove();
});

const baseEnv = () => ({
  HOME: home,
  ADMIN_URL: stack.adminUrl,
  RUNTIME_URL: stack.runtimeUrl,
  ADMIN_API_KEY: ADMIN_KEY,
});

async function br(args: readonly string[], options: CliOptions = {}): Promise<CliRun> {
  const child = startCli([process.execPath, cli.file], args, {
    ...options,
    env: { ...baseEnv(), ...options.env },
  });
  const run = await finished(child);
  transcript.push({ args, text: run.stdout + run.stderr });
  return run;
}

/** `--json` of a command that must succeed. */
async function json<T = Json>(args: readonly string[], options: CliOptions = {}): Promise<T> {
  const run = await br([...args, '--json'], options);
  expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(0);
  return JSON.parse(run.stdout) as T;
}

/** The body is what the operation answers, per its OpenAPI document. */
function answers(server: Server, method: string, path: string, status: number, body: unknown) {
  expect(documentProblem(server, method, path, status, body)).toBeUndefined();
}

const tenant = `cli-${randomUUID().slice(0, 8)}`;
const scope = `tenant:${tenant}`;
const prod = `${scope}/workspace:prod`;
let tenantKey: string;
let operatorKey: string;

describe('budget-reservations, as a process', () => {
  it('walks the README: tenant, key (its secret once), budgets, funding, validate, introspect, balances', async () => {
    const created = await json(['tenants', 'create', tenant, '--name', 'CLI Corp']);
    const key = await br(['keys', 'create', tenant, '--name', 'agents', '--field', 'key_secret']);
    tenantKey = key.stdout.trim();
    const root = await json(['budgets', 'create', scope, '--allocated', '100000000']);
    const ws = await json([
      'budgets',
      'create',
      prod,
      '--allocated',
      '50000000',
      '--shards',
      '4',
      '--max-tokens',
      '2048',
      '--tool-deny',
      'shell',
      '--caps-below-bps',
      '2000',
      '--thresholds',
      '50,90',
    ]);
    const fundOnce = ['budgets', 'fund', prod, 'CREDIT', '50000000', '--idempotency-key', 'fund-1'];
    const funded = await json(fundOnce);
    const again = await json(fundOnce);
    const asTenant = { env: { CYCLES_API_KEY: tenantKey } };
    const valid = await json(['keys', 'validate'], asTenant);
    const me = await json(['introspect', '--as', 'tenant'], asTenant);
    const admin = await json(['introspect'], asTenant);
    const balances = await json<{ balances: Json[] }>(
      ['balances', '--workspace', 'prod', '--include-children'],
      asTenant,
    );
    const human = await br(['budgets', 'get', prod]);

    answers('admin', 'POST', '/v1/admin/tenants', 201, created);
    expect(key.code).toBe(0);
    expect(tenantKey).toMatch(/^\S{20,}$/);
    answers('admin', 'POST', '/v1/admin/budgets', 201, root);
    expect(ws).toMatchObject({
      scope: prod,
      thresholds: [50, 90],
      allocated: { amount: 50_000_000 },
    });
    answers(
      'admin',
      'POST',
      `/v1/admin/budgets/${encodeURIComponent(prod)}/USD_MICROCENTS/fund`,
      200,
      funded,
    );
    expect(again).toEqual(funded); // the same key: applied once
    expect(funded).toMatchObject({ new_allocated: { amount: 100_000_000 } });
    expect(valid).toMatchObject({ valid: true, tenant_id: tenant });
    answers('admin', 'POST', '/v1/auth/validate', 200, valid);
    expect(me).toMatchObject({ auth_type: 'tenant', tenant_id: tenant });
    answers('runtime', 'GET', '/v1/auth/introspect', 200, me);
    expect(admin).toMatchObject({ auth_type: 'admin' });
    answers('runtime', 'GET', '/v1/balances', 200, balances);
    expect(balances.balances.map((b) => b.scope)).toEqual([prod]);
    expect(human.stdout).toMatch(/remaining:\s+100000000/);
    expect(human.stdout).toContain('"max_tokens":2048');
  });

  it('tenants: list, get, update, suspend, resume, and close only with --yes', async () => {
    const other = `cli-close-${randomUUID().slice(0, 8)}`;
    await json(['tenants', 'create', other, '--name', 'To close']);

    const list = await json<{ tenants: Json[] }>(['tenants', 'list', '--all']);
    const got = await json(['tenants', 'get', tenant]);
    const renamed = await json(['tenants', 'update', tenant, '--name', 'CLI Corporation']);
    const suspended = await json(['tenants', 'suspend', tenant]);
    const resumed = await json(['tenants', 'resume', tenant]);
    const unconfirmed = await br(['tenants', 'close', other]);
    const closed = await json(['tenants', 'close', other, '--yes']);
    const table = await br(['tenants', 'list', '--status', 'CLOSED']);

    answers('admin', 'GET', '/v1/admin/tenants', 200, list);
    expect(list.tenants.map((t) => t.tenant_id)).toEqual(expect.arrayContaining([tenant, other]));
    answers('admin', 'GET', `/v1/admin/tenants/${tenant}`, 200, got);
    expect(renamed).toMatchObject({ name: 'CLI Corporation' });
    answers('admin', 'PATCH', `/v1/admin/tenants/${tenant}`, 200, renamed);
    expect([suspended.status, resumed.status, closed.status]).toEqual([
      'SUSPENDED',
      'ACTIVE',
      'CLOSED',
    ]);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toContain('--yes');
    expect(table.stdout).toMatch(
      new RegExp(
        `^TENANT\\s+NAME\\s+STATUS\\s+CREATED\\n[\\s\\S]*${other}\\s+To close\\s+CLOSED`,
        'm',
      ),
    );
  });

  it('keys: list, get, update, revoke; validate says why a key is not valid (exit 4)', async () => {
    const spare = await json<Json>([
      'keys',
      'create',
      tenant,
      '--name',
      'spare',
      '--permissions',
      'balances:read,reservations:list',
    ]);
    const id = String(spare.key_id);

    const list = await json<{ keys: Json[] }>(['keys', 'list', '--tenant', tenant]);
    const got = await json(['keys', 'get', id]);
    const updated = await json([
      'keys',
      'update',
      id,
      '--name',
      'spare key',
      '--permissions',
      'balances:read',
    ]);
    const revoked = await json(['keys', 'revoke', id, '--reason', 'rotated']);
    const invalid = await br(['keys', 'validate', '--stdin', '--json'], {
      input: `${String(spare.key_secret)}\n`,
    });
    const human = await br(['keys', 'list', '--tenant', tenant]);

    answers('admin', 'POST', '/v1/admin/api-keys', 201, spare);
    expect(spare.permissions).toEqual(['balances:read', 'reservations:list']);
    answers('admin', 'GET', '/v1/admin/api-keys', 200, list);
    expect(list.keys.every((k) => !('key_secret' in k))).toBe(true);
    answers('admin', 'GET', `/v1/admin/api-keys/${id}`, 200, got);
    expect(updated).toMatchObject({ name: 'spare key', permissions: ['balances:read'] });
    expect(revoked).toMatchObject({ status: 'REVOKED', revoked_reason: 'rotated' });
    answers('admin', 'DELETE', `/v1/admin/api-keys/${id}`, 200, revoked);
    expect(invalid.code).toBe(4);
    expect(JSON.parse(invalid.stdout)).toEqual({ valid: false, reason: 'KEY_REVOKED' });
    expect(human.stdout).toMatch(/spare key\s+\S+\s+REVOKED\s+balances:read/);
  });

  it('budgets: list, get, update shards, caps and thresholds, freeze, unfreeze, periods', async () => {
    const research = `${scope}/workspace:research`;
    await json(['budgets', 'create', research, '--allocated', '500000000', '--period', 'DAILY']);

    const list = await json<{ ledgers: Json[] }>(['budgets', 'list', '--tenant', tenant]);
    const got = await json(['budgets', 'get', prod]);
    const grown = await json([
      'budgets',
      'update',
      scope,
      '--shards',
      '8',
      '--overdraft-limit',
      '1000',
    ]);
    const capped = await json([
      'budgets',
      'update',
      prod,
      '--max-tokens',
      '512',
      '--default-thresholds',
    ]);
    const cleared = await json<Json>([
      'budgets',
      'update',
      prod,
      '--clear-caps',
      '--thresholds',
      'none',
    ]);
    const frozen = await json(['budgets', 'freeze', prod]);
    const thawed = await json(['budgets', 'unfreeze', prod]);
    const periods = await json(['budgets', 'periods', research]);
    const nothing = await br(['budgets', 'update', prod]);

    answers('admin', 'GET', '/v1/admin/budgets', 200, list);
    expect(list.ledgers.map((b) => b.scope).sort()).toEqual([scope, prod, research].sort());
    answers('admin', 'GET', '/v1/admin/budgets/lookup', 200, got);
    answers('admin', 'PATCH', '/v1/admin/budgets', 200, grown);
    expect(grown).toMatchObject({ overdraft_limit: { amount: 1000 } });
    expect(capped).toMatchObject({ caps: { max_tokens: 512 } });
    expect(cleared.caps).toBeUndefined();
    expect(cleared.thresholds).toEqual([]);
    expect([frozen, thawed].map((b) => (b as Json).status)).toEqual(['FROZEN', 'ACTIVE']);
    answers('admin', 'POST', '/v1/admin/budgets/freeze', 200, frozen);
    answers('admin', 'GET', '/v1/admin/budgets/periods', 200, periods);
    expect(nothing.code).toBe(2);
  });

  it('reservations: list, get, force-release with a reason that the audit trail shows', async () => {
    const held = await request('POST', `${stack.runtimeUrl}/v1/reservations`, {
      headers: { 'x-service-api-key': tenantKey },
      body: reserveBody({
        subject: { workspace: 'prod' },
        estimate: { unit: 'USD_MICROCENTS', amount: 5000 },
      }),
    });
    const id = String(held.body.reservation_id);

    const list = await json<{ reservations: Json[] }>([
      'reservations',
      'list',
      '--tenant',
      tenant,
      '--status',
      'ACTIVE',
    ]);
    const own = await json(['reservations', 'list', '--as', 'tenant', '--workspace', 'prod'], {
      env: { CYCLES_API_KEY: tenantKey },
    });
    const got = await json(['reservations', 'get', id], { env: { CYCLES_API_KEY: tenantKey } });
    const released = await json(['reservations', 'force-release', id, '--reason', 'stuck agent']);
    const audit = await json<{ logs: Json[] }>([
      'audit',
      '--tenant',
      tenant,
      '--operation',
      'releaseReservation',
    ]);
    const human = await br(['audit', '--tenant', tenant, '--limit', '2']);

    expect(held.status).toBe(200);
    expect(list.reservations.map((r) => r.reservation_id)).toEqual([id]);
    answers('admin', 'GET', '/v1/reservations', 200, list);
    answers('runtime', 'GET', '/v1/reservations', 200, own);
    answers('runtime', 'GET', `/v1/reservations/${id}`, 200, got);
    expect(released).toMatchObject({ status: 'RELEASED', released: { amount: 5000 } });
    answers('admin', 'POST', `/v1/reservations/${id}/release`, 200, released);
    answers('admin', 'GET', '/v1/admin/audit/logs', 200, audit);
    expect(audit.logs).toHaveLength(1);
    expect(audit.logs[0]).toMatchObject({ resource_id: id, metadata: { actor: 'admin' } });
    expect(human.stdout).toMatch(/^TIME\s+TENANT\s+OPERATION/);
    expect(human.stdout).toContain('More results: add --cursor');
  });

  it('events and webhooks: create (the secret alone with --field), list, update, pause, resume, test, deliveries, replay, bulk, security, delete only with --yes', async () => {
    const receiver: Receiver = await startReceiver('/cli');
    try {
      const owner = `cli-hooks-${randomUUID().slice(0, 8)}`;
      await json(['tenants', 'create', owner, '--name', 'Hooks']);
      const secret = await br([
        'webhooks',
        'create',
        receiver.url,
        '--tenant',
        owner,
        '--types',
        'budget.created',
        '--categories',
        'tenant',
        '--field',
        'signing_secret',
      ]);
      const list = await json<{ subscriptions: Json[] }>(['webhooks', 'list', '--tenant', owner]);
      const id = String(list.subscriptions[0]?.subscription_id);
      const refused = await br([
        'webhooks',
        'create',
        receiver.url,
        '--tenant',
        owner,
        '--types',
        'api_key.created',
      ]);
      const got = await json(['webhooks', 'get', id]);
      const updated = await json(['webhooks', 'update', id, '--max-retries', '2', '--name', 'ops']);
      const paused = await json<Json>(['webhooks', 'pause', id]);
      const resumed = await json<Json>(['webhooks', 'resume', id]);
      const tested = await json<Json>(['webhooks', 'test', id]);
      await json(['budgets', 'create', `tenant:${owner}`, '--allocated', '1000']);
      await eventually(
        () => receiver.received.some((r) => r.event.event_type === 'budget.created'),
        'a delivery',
      );
      const deliveries = await json(['webhooks', 'deliveries', id]);
      const events = await json<{ events: Json[] }>(['events', 'list', '--tenant', owner, '--all']);
      const first = events.events.find((e) => e.event_type === 'budget.created');
      const event = await json(['events', 'get', String(first?.event_id)]);
      const replayed = await json<Json>(['webhooks', 'replay', id, '--types', 'budget.created']);
      const security = await json(['webhooks', 'security']);
      const bulk = await json<Json>([
        'webhooks',
        'bulk',
        'PAUSE',
        '--tenant',
        owner,
        '--expected-count',
        '1',
      ]);
      const unconfirmed = await br(['webhooks', 'delete', id]);
      const deleted = await br(['webhooks', 'delete', id, '--yes']);

      expect(secret.code, secret.stderr).toBe(0);
      expect(secret.stdout.trim()).toMatch(/^whsec_[A-Za-z0-9_-]+$/);
      answers('admin', 'GET', '/v1/admin/webhooks', 200, list);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain('admin-only');
      answers('admin', 'GET', `/v1/admin/webhooks/${id}`, 200, got);
      answers('admin', 'PATCH', `/v1/admin/webhooks/${id}`, 200, updated);
      expect([paused.status, resumed.status]).toEqual(['PAUSED', 'ACTIVE']);
      expect(tested).toMatchObject({ success: true, response_status: 204 });
      answers('admin', 'GET', `/v1/admin/webhooks/${id}/deliveries`, 200, deliveries);
      answers('admin', 'GET', '/v1/admin/events', 200, events);
      answers('admin', 'GET', `/v1/admin/events/${first?.event_id}`, 200, event);
      answers('admin', 'POST', `/v1/admin/webhooks/${id}/replay`, 202, replayed);
      expect(replayed.events_queued).toBe(1);
      answers('admin', 'GET', '/v1/admin/config/webhook-security', 200, security);
      answers('admin', 'POST', '/v1/admin/webhooks/bulk-action', 200, bulk);
      expect(unconfirmed.code).toBe(2);
      expect(deleted.code, deleted.stderr).toBe(0);
    } finally {
      await receiver.close();
    }
  });

  it('webhooks and events with a tenant key: its own subscriptions, its own events', async () => {
    const asTenant = { env: { CYCLES_API_KEY: tenantKey } };
    const key = await br([
      'keys',
      'create',
      tenant,
      '--name',
      'hooks',
      '--permissions',
      'webhooks:read,webhooks:write,events:read',
      '--field',
      'key_secret',
    ]);
    const own = { env: { CYCLES_API_KEY: key.stdout.trim() } };

    const created = await json<{ subscription: Json }>(
      [
        'webhooks',
        'create',
        'http://127.0.0.1:9/own',
        '--types',
        'budget.exhausted',
        '--as',
        'tenant',
      ],
      own,
    );
    const list = await json<{ subscriptions: Json[] }>(['webhooks', 'list', '--as', 'tenant'], own);
    const events = await json<{ events: Json[] }>(['events', 'list', '--as', 'tenant'], own);
    const id = String(created.subscription.subscription_id);
    const replayed = await json<Json>(['webhooks', 'replay', id, '--as', 'tenant'], own);
    const forbidden = await br(['webhooks', 'list', '--as', 'tenant'], asTenant);

    expect(created.subscription.tenant_id).toBe(tenant);
    answers('admin', 'GET', '/v1/webhooks', 200, list);
    expect(list.subscriptions.map((s) => s.tenant_id)).toEqual([tenant]);
    answers('admin', 'GET', '/v1/events', 200, events);
    expect(events.events.every((e) => e.tenant_id === tenant)).toBe(true);
    answers('admin', 'POST', `/v1/webhooks/${id}/replay`, 202, replayed);
    expect(forbidden.code).not.toBe(0);
  });

  it('watch prints the first reading and each change, then stops after --count or cleanly on Ctrl-C', async () => {
    const counted = await br([
      'budgets',
      'watch',
      scope,
      '--interval',
      '1',
      '--count',
      '2',
      '--json',
    ]);
    const child = startCli(
      [process.execPath, cli.file],
      ['budgets', 'watch', prod, '--interval', '1'],
      { env: baseEnv() },
    );
    const done = finished(child);
    let seen = '';
    child.stdout?.on('data', (d: Buffer) => {
      seen += d.toString();
    });
    await until(() => seen.includes('remaining'));
    await json(['budgets', 'fund', prod, 'DEBIT', '1000']);
    await until(() => seen.split('\n').filter(Boolean).length >= 2);
    child.kill('SIGINT');
    const watched = await done;

    expect(counted.code).toBe(0);
    const lines = counted.stdout.trim().split('\n');
    expect(lines).toHaveLength(1); // no change between the two readings
    answers('admin', 'GET', '/v1/admin/budgets/lookup', 200, JSON.parse(lines[0] as string));
    expect(watched.code).toBe(0);
    expect(watched.stderr).toBe('');
    const [first, second] = watched.stdout.trim().split('\n');
    expect(first).toMatch(/remaining 100000000 USD_MICROCENTS/);
    expect(second).toMatch(/remaining 99999000 USD_MICROCENTS/);
  });

  it('policies, bulk actions and the overview; an operator credential signs the CLI in under its own name', async () => {
    const created = await json<{ policy_id: string }>([
      'policies',
      'create',
      `${scope}/agent:*`,
      '--tenant',
      tenant,
      '--name',
      'agents',
      '--max-ttl-ms',
      '300000',
      '--caps',
      '{"max_tokens":512}',
    ]);
    const list = await json<{ policies: Json[] }>(['policies', 'list', '--tenant', tenant]);
    const got = await json(['policies', 'get', created.policy_id]);
    const disabled = await json(['policies', 'update', created.policy_id, '--status', 'DISABLED']);
    const badCaps = await br(['policies', 'update', created.policy_id, '--caps', '{']);

    const group = `cli-bulk-${randomUUID().slice(0, 6)}`;
    for (const n of [1, 2]) await json(['tenants', 'create', `${group}-${n}`, '--name', group]);
    const suspend = [
      'tenants',
      'bulk-action',
      'SUSPEND',
      '--search',
      group,
      '--idempotency-key',
      `${group}-s`,
    ];
    const gated = await br([...suspend, '--expected-count', '3']);
    const suspended = await json<{ succeeded: Json[] }>([...suspend, '--expected-count', '2']);
    const replayed = await json([...suspend, '--expected-count', '2']);
    const unconfirmedClose = await br(['tenants', 'bulk-action', 'CLOSE', '--search', group]);
    const credited = await json<{ succeeded: Json[] }>([
      'budgets',
      'bulk-action',
      'CREDIT',
      '--tenant',
      tenant,
      '--unit',
      'USD_MICROCENTS',
      '--amount',
      '1000',
      '--scope-prefix',
      prod,
    ]);
    const noAmount = await br(['budgets', 'bulk-action', 'DEBIT', '--tenant', tenant]);

    // A named operator credential (owner __system__), read-only: it reads, it cannot write.
    const secret = (
      await br([
        'keys',
        'create',
        '__system__',
        '--name',
        'alice',
        '--permissions',
        'admin:read',
        '--field',
        'key_secret',
      ])
    ).stdout.trim();
    operatorKey = secret;
    const asAlice = { env: { ADMIN_API_KEY: secret } };
    const overview = await json<{ tenant_counts: { suspended: number } }>(['overview'], asAlice);
    const refused = await br(['tenants', 'bulk-action', 'REACTIVATE', '--search', group], asAlice);
    const human = await br(['overview'], asAlice);

    answers('admin', 'POST', '/v1/admin/policies', 201, created);
    answers('admin', 'GET', '/v1/admin/policies', 200, list);
    expect(list.policies.map((p) => p.policy_id)).toEqual([created.policy_id]);
    answers('admin', 'GET', `/v1/admin/policies/${created.policy_id}`, 200, got);
    expect(got).toMatchObject({
      caps: { max_tokens: 512 },
      reservation_ttl_override: { max_ttl_ms: 300_000 },
    });
    answers('admin', 'PATCH', `/v1/admin/policies/${created.policy_id}`, 200, disabled);
    expect(disabled).toMatchObject({ status: 'DISABLED' });
    expect(badCaps.code).toBe(2);
    expect(gated.code).toBe(4); // expected_count differs: 409, nothing done
    answers('admin', 'POST', '/v1/admin/tenants/bulk-action', 200, suspended);
    expect(suspended.succeeded).toHaveLength(2);
    expect(replayed).toEqual(suspended);
    expect(unconfirmedClose.code).toBe(2);
    answers('admin', 'POST', '/v1/admin/budgets/bulk-action', 200, credited);
    expect(credited.succeeded).toHaveLength(1); // the budget under the prefix: its ledger id
    expect(noAmount.code).toBe(2);
    answers('admin', 'GET', '/v1/admin/overview', 200, overview);
    expect(overview.tenant_counts.suspended).toBeGreaterThanOrEqual(2);
    expect(refused.code).toBe(5); // admin:read grants no write
    expect(human.stdout).toMatch(/tenants:\s+\d+ \(/);
  });

  it('exits 2, 3, 4, 5 and 6 by error class, with SPEC’s error body on stderr under --json', async () => {
    const usage = await br([
      'budgets',
      'create',
      scope,
      '--allocated',
      '1',
      '--thresholds',
      '200',
      '--json',
    ]);
    const missing = await br(['tenants', 'get', 'no-such-tenant', '--json']);
    const duplicate = await br(['tenants', 'create', tenant, '--name', 'again']);
    const frozen = await br(['budgets', 'freeze', scope]);
    const refused = await br(['budgets', 'fund', scope, 'DEBIT', '1000000000000000', '--json']);
    const noAmount = await br(['budgets', 'fund', scope, 'CREDIT']);
    const wrongKey = await br(['tenants', 'list'], { env: { ADMIN_API_KEY: 'not-the-key' } });
    const noKey = await br(['tenants', 'list'], { env: { ADMIN_API_KEY: undefined } });
    const down = await br([
      'tenants',
      'list',
      '--admin-url',
      'http://127.0.0.1:9',
      '--timeout',
      '5',
    ]);
    await br(['budgets', 'unfreeze', scope]);

    expect(noAmount.code).toBe(2);
    expect(noAmount.stderr).toContain(
      'amount: required for CREDIT (only RESET_SPENT may leave it out)',
    );
    expect(usage.code).toBe(2);
    const body = JSON.parse(usage.stderr) as Json;
    expect(body).toMatchObject({ error: 'INVALID_REQUEST', status: 400 });
    expect(body.request_id).toEqual(expect.any(String));
    expect(usage.stdout).toBe('');
    expect(missing.code).toBe(3);
    expect(JSON.parse(missing.stderr)).toMatchObject({ error: 'NOT_FOUND', status: 404 });
    expect(duplicate.code).toBe(4);
    expect(duplicate.stderr).toMatch(/^error: DUPLICATE_RESOURCE \(HTTP 409\)/);
    expect(frozen.code).toBe(0);
    expect([refused.code, JSON.parse(refused.stderr).error]).toEqual([4, 'BUDGET_EXCEEDED']);
    expect(wrongKey.code).toBe(5);
    expect(wrongKey.stderr).toContain('UNAUTHORIZED');
    expect(noKey.code).toBe(5);
    expect(noKey.stderr).toContain('ADMIN_API_KEY');
    expect(down.code).toBe(6);
    expect(down.stderr).toMatch(/did not answer/);
  });

  it('funds many budgets from CSV; the same file again funds nothing twice; a failed row fails the run', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cli-bulk-'));
    const csv = join(dir, 'funds.csv');
    await writeFile(
      csv,
      `scope,amount,reason\n${scope},1000,top-up\n${prod},2000,\n${scope}/workspace:none,5,\n${scope},1000,top-up\n`,
    );
    const before = await json<Json>(['budgets', 'get', scope]);

    const first = await br(['budgets', 'fund-many', csv, '--json']);
    const retry = await br(['budgets', 'fund-many', csv]);
    const after = await json<Json>(['budgets', 'get', scope]);
    const jsonl = join(dir, 'funds.jsonl');
    await writeFile(
      jsonl,
      `${JSON.stringify({ scope, amount: 7, idempotency_key: 'jsonl-1' })}\n${JSON.stringify({ scope, amount: 7, idempotency_key: 'jsonl-1' })}\n`,
    );
    const lines = await json<{ ok: number }>(['budgets', 'fund-many', jsonl]);
    const bad = join(dir, 'bad.csv');
    await writeFile(bad, `scope,amount\n${scope},12\n${scope},-3\n${scope},x\n`);
    const invalid = await br(['budgets', 'fund-many', bad]);
    const final = await json<Json>(['budgets', 'get', scope]);

    expect(first.code).toBe(3); // the one failed row: its budget does not exist
    const results = JSON.parse(first.stdout) as { results: Json[]; ok: number; failed: number };
    expect([results.ok, results.failed]).toEqual([3, 1]);
    expect(results.results.map((r) => r.status)).toEqual(['ok', 'ok', 'failed', 'ok']);
    expect(results.results[2]).toMatchObject({
      row: 3,
      error: { error: 'NOT_FOUND', status: 404 },
    });
    answers(
      'admin',
      'POST',
      `/v1/admin/budgets/${encodeURIComponent(scope)}/USD_MICROCENTS/fund`,
      200,
      results.results[0]?.result,
    );
    expect(retry.code).toBe(3);
    expect(retry.stdout).toMatch(/3 done, 0 already there, 1 failed/);
    // Two identical rows are two credits; the retry of the whole file added nothing.
    const amountOf = (b: Json) => (b.allocated as { amount: number }).amount;
    expect(amountOf(after) - amountOf(before)).toBe(2000);
    expect(lines.ok).toBe(2);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toMatch(/2 of 3 rows are not valid; nothing was sent/);
    expect(amountOf(final) - amountOf(after)).toBe(7);
  });

  it('creates many keys and tenants from files; a retry makes none twice and prints no secret again', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cli-bulk-'));
    const keys = join(dir, 'keys.csv');
    await writeFile(
      keys,
      `tenant_id,name,permissions\n${tenant},reader-1,balances:read reservations:list\n${tenant},reader-2,\n`,
    );
    const newTenant = `cli-many-${randomUUID().slice(0, 8)}`;
    const tenants = join(dir, 'tenants.csv');
    await writeFile(tenants, `tenant_id,name\n${newTenant},Many Corp\n${tenant},Exists already\n`);
    const budgets = join(dir, 'budgets.csv');
    await writeFile(
      budgets,
      `scope,allocated,period,thresholds\n${scope}/app:bulk,1000,MONTHLY,50;100\n`,
    );

    const made = await br(['keys', 'create-many', keys, '--json']);
    const remade = await br(['keys', 'create-many', keys, '--json']);
    const t1 = await br(['tenants', 'create-many', tenants, '--json']);
    const b1 = await br(['budgets', 'create-many', budgets, '--json']);
    const b2 = await br(['budgets', 'create-many', budgets]);

    const first = JSON.parse(made.stdout) as { results: { status: string; result?: Json }[] };
    expect(made.code).toBe(0);
    expect(first.results.map((r) => r.status)).toEqual(['ok', 'ok']);
    expect(first.results[0]?.result).toMatchObject({
      permissions: ['balances:read', 'reservations:list'],
    });
    answers('admin', 'POST', '/v1/admin/api-keys', 201, first.results[1]?.result);
    const second = JSON.parse(remade.stdout) as { results: { status: string }[] };
    expect(second.results.map((r) => r.status)).toEqual(['exists', 'exists']);
    expect(remade.stdout).not.toContain('key_secret');
    expect(JSON.parse(t1.stdout).results.map((r: Json) => r.status)).toEqual(['ok', 'exists']);
    expect(JSON.parse(b1.stdout).results[0]).toMatchObject({
      status: 'ok',
      result: { thresholds: [50, 100], period: 'MONTHLY' },
    });
    expect(b2.stdout).toMatch(/0 done, 1 already there, 0 failed/);
  });

  it('reads a profile file; the environment beats the default profile, --profile beats the environment', async () => {
    const configHome = await mkdtemp(join(tmpdir(), 'cli-profiles-'));
    const file = join(configHome, '.config', 'budget-reservations', 'config.json');
    await import('node:fs/promises').then((fs) =>
      fs.mkdir(join(configHome, '.config', 'budget-reservations'), { recursive: true }),
    );
    await writeFile(
      file,
      JSON.stringify({
        default_profile: 'broken',
        profiles: {
          broken: { admin_url: 'http://127.0.0.1:9', admin_api_key: 'wrong-admin-key' },
          local: {
            admin_url: stack.adminUrl,
            runtime_url: stack.runtimeUrl,
            admin_api_key: ADMIN_KEY,
            tenant_api_key: tenantKey,
          },
        },
      }),
      { mode: 0o600 },
    );
    const onlyProfile = {
      HOME: configHome,
      ADMIN_URL: undefined,
      RUNTIME_URL: undefined,
      ADMIN_API_KEY: undefined,
    };

    const byDefault = await br(['tenants', 'list', '--timeout', '5'], { env: onlyProfile });
    const envWins = await br(['tenants', 'get', tenant], {
      env: { ...onlyProfile, ADMIN_URL: stack.adminUrl, ADMIN_API_KEY: ADMIN_KEY },
    });
    const named = await br(['balances', '--profile', 'local'], {
      env: { ...onlyProfile, ADMIN_API_KEY: 'wrong-admin-key' },
    });
    const shown = await json<{
      profile: string;
      settings: Record<string, { value: string; source: string }>;
    }>(['config', 'show', '--profile', 'local'], {
      env: { ...onlyProfile, ADMIN_API_KEY: 'stray-key' },
    });
    const human = await br(['config', 'show'], {
      env: { ...onlyProfile, ADMIN_API_KEY: ADMIN_KEY },
    });

    expect(byDefault.code).toBe(6); // the default profile's server does not answer
    expect(envWins.code).toBe(0);
    expect(named.code).toBe(0);
    expect(shown.profile).toBe('local');
    expect(shown.settings.adminKey).toEqual({ value: '********', source: 'profile local' });
    expect(shown.settings.tenantKey?.source).toBe('profile local');
    expect(shown.settings.tenantKey?.value).toMatch(/^.{6}…\(\d+ characters\)$/);
    expect(human.stdout).toMatch(/admin key\s+\*{8}\s+environment\s+ADMIN_API_KEY/);
  });

  it('charges, refunds, the cap of one reservation and estimate accuracy', async () => {
    const headers = { 'x-service-api-key': tenantKey };
    const held = await request('POST', `${stack.runtimeUrl}/v1/reservations`, {
      headers,
      body: reserveBody({
        subject: { workspace: 'prod' },
        estimate: { unit: 'USD_MICROCENTS', amount: 5000 },
      }),
    });
    const id = String(held.body.reservation_id);
    for (const amount of [1000, 1500]) {
      await request('POST', `${stack.runtimeUrl}/v1/reservations/${id}/charges`, {
        headers,
        body: { idempotency_key: randomUUID(), amount: { unit: 'USD_MICROCENTS', amount } },
      });
    }
    const event = await request('POST', `${stack.runtimeUrl}/v1/events`, {
      headers,
      body: {
        idempotency_key: randomUUID(),
        subject: { workspace: 'prod' },
        action: { kind: 'tool', name: 'search' },
        actual: { unit: 'USD_MICROCENTS', amount: 300 },
      },
    });

    const charges = await json(['reservations', 'charges', id]);
    const human = await br(['reservations', 'charges', id]);
    const refunded = await json([
      'reservations',
      'refund',
      id,
      '700',
      '--reason',
      'provider refunded a part',
    ]);
    const tooMuch = await br(['reservations', 'refund', id, '2000', '--reason', 'x']);
    const eventRefund = await json(
      [
        'events',
        'refund',
        String(event.body.event_id),
        '100',
        '--reason',
        'search failed',
        '--as',
        'tenant',
      ],
      { env: { CYCLES_API_KEY: tenantKey } },
    );
    const capped = await json(['budgets', 'update', prod, '--max-reservation', '4000']);
    const uncapped = await json(['budgets', 'update', prod, '--clear-max-reservation']);
    const accuracy = await json(['budgets', 'accuracy', prod]);
    const table = await br(['budgets', 'accuracy', prod]);

    expect(charges).toMatchObject({
      charged_total: { amount: 2500 },
      held: { amount: 2500 },
      charges: [{ sequence: 1 }, { sequence: 2 }],
    });
    answers('admin', 'GET', `/v1/reservations/${id}/charges`, 200, charges);
    expect(human.stdout).toMatch(/charged:\s+2500 USD_MICROCENTS/);
    expect(refunded).toMatchObject({
      refunded_total: { amount: 700 },
      refundable: { amount: 1800 },
    });
    answers('admin', 'POST', `/v1/reservations/${id}/refunds`, 200, refunded);
    expect(tooMuch.code).toBe(2);
    expect(eventRefund).toMatchObject({
      event_id: event.body.event_id,
      refundable: { amount: 200 },
    });
    answers(
      'runtime',
      'POST',
      `/v1/events/${String(event.body.event_id)}/refunds`,
      200,
      eventRefund,
    );
    expect(capped).toMatchObject({ max_reservation_amount: { amount: 4000 } });
    expect(uncapped).not.toHaveProperty('max_reservation_amount');
    answers('admin', 'GET', '/v1/admin/budgets/accuracy', 200, accuracy);
    expect(table.stdout).toMatch(/^Estimates on tenant:/);
    expect(table.stdout).toMatch(/KIND\s+SETTLED/);
  });

  it('delegates part of a hold by hand and lists a reservation’s delegations', async () => {
    const held = await request('POST', `${stack.runtimeUrl}/v1/reservations`, {
      headers: { 'x-service-api-key': tenantKey },
      body: reserveBody({
        subject: { workspace: 'prod' },
        estimate: { unit: 'USD_MICROCENTS', amount: 5000 },
      }),
    });
    const id = String(held.body.reservation_id);
    const asTenant = { env: { CYCLES_API_KEY: tenantKey } };

    const child = await json(
      ['reservations', 'delegate', id, '2000', '--ttl-ms', '30000', '--as', 'tenant'],
      asTenant,
    );
    const listed = await json(['reservations', 'delegations', id]);
    const human = await br(['reservations', 'delegations', id]);
    const tooMuch = await br(['reservations', 'delegate', id, '4000', '--as', 'tenant'], asTenant);

    answers('runtime', 'POST', `/v1/reservations/${id}/delegations`, 200, child);
    expect(listed).toMatchObject({
      reservation_id: id,
      held: { amount: 3000 },
      delegations: [{ reservation_id: child.reservation_id, status: 'ACTIVE', depth: 1 }],
    });
    answers('admin', 'GET', `/v1/reservations/${id}/delegations`, 200, listed);
    expect(human.stdout).toMatch(/held:\s+3000 USD_MICROCENTS/);
    expect(human.stdout).toContain(String(child.reservation_id));
    expect(tooMuch.code).toBe(4);
  });

  it('answers health and the OpenAPI documents without a key', async () => {
    const health = await json<Json>(['health'], { env: { ADMIN_API_KEY: undefined } });
    const admin = await json<Json>(['openapi']);
    const version = await br(['openapi', '--runtime', '--field', 'info.title']);
    const oneDown = await br(['health', '--runtime-url', 'http://127.0.0.1:9', '--timeout', '5']);

    expect(health).toMatchObject({ admin: { status: 'UP' }, runtime: { status: 'UP' } });
    expect(admin.openapi).toBe('3.1.0');
    expect(version.stdout.trim()).toBe('Budget reservation service: runtime API');
    expect(oneDown.code).toBe(6);
    expect(oneDown.stdout).toMatch(/runtime\s+http:\/\/127\.0\.0\.1:9\s+DOWN/);
  });

  it('runs from the repository as npm run cli, npx and bin.mjs, with --verbose lines that hold no key', async () => {
    const env = { ...baseEnv(), CYCLES_API_KEY: tenantKey, npm_config_update_notifier: 'false' };
    const viaBin = await finished(
      startCli(
        [process.execPath, 'cli/bin.mjs'],
        ['introspect', '--verbose', '--field', 'auth_type'],
        { env },
      ),
    );
    const viaNpm = await finished(
      startCli(['npm', 'run', '-s', 'cli', '--'], ['budgets', 'get', scope, '--field', 'scope'], {
        env,
      }),
    );
    const viaNpx = await finished(
      startCli(['npx', '--no-install', 'budget-reservations'], ['--version'], { env }),
    );
    transcript.push(
      { args: ['bin'], text: viaBin.stdout + viaBin.stderr },
      { args: ['npm'], text: viaNpm.stdout + viaNpm.stderr },
    );

    expect([viaBin.code, viaBin.stdout.trim()]).toEqual([0, 'admin']);
    expect(viaBin.stderr).toMatch(
      /^> GET http:\/\/127\.0\.0\.1:\d+\/v1\/auth\/introspect\n< 200 in \d+ ms \(request [\w-]+\)\n$/,
    );
    expect([viaNpm.code, viaNpm.stdout.trim()]).toEqual([0, scope]);
    expect([viaNpx.code, viaNpx.stdout.trim()]).toEqual([0, '0.1.0']);
  });

  it('never echoed a key: the admin key nowhere, a tenant key only where it was created', () => {
    const withAdminKey = transcript.filter((t) => t.text.includes(ADMIN_KEY));
    const withTenantKey = transcript.filter((t) => t.text.includes(tenantKey));
    const withOperatorKey = transcript.filter((t) => t.text.includes(operatorKey));

    expect(transcript.length).toBeGreaterThan(60);
    expect(withAdminKey).toEqual([]);
    expect(withTenantKey.map((t) => t.args.join(' '))).toEqual([
      `keys create ${tenant} --name agents --field key_secret`,
    ]);
    expect(withOperatorKey.map((t) => t.args.join(' '))).toEqual([
      'keys create __system__ --name alice --permissions admin:read --field key_secret',
    ]);
  });
});

async function until(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
