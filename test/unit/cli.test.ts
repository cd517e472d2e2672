import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { derivedKey } from '../../cli/commands/bulk.js';
import { commands } from '../../cli/commands/index.js';
import { rateLimitsOf, rateLimitsText } from '../../cli/commands/keys.js';
import { mask, resolveConfig } from '../../cli/config.js';
import type { Io } from '../../cli/context.js';
import { CliError, EXIT, exitCodeOf } from '../../cli/exit-codes.js';
import { run } from '../../cli/main.js';
import { ApiError } from '../../client/index.js';
import { documentOf } from '../helpers/openapi.js';

// Issue 30 § 2: the CLI's pure parts — which operations it covers, how it reads its
// configuration, which exit code each error class gets, its help. test/integration/cli.test.ts
// runs it as a process against the local stack.

type Json = Record<string, unknown>;
const operationIds = (server: 'admin' | 'runtime') =>
  Object.values(documentOf(server).paths as Record<string, Json>).flatMap((item) =>
    Object.values(item).map((op) => (op as { operationId: string }).operationId),
  );
const declared = new Set(commands.flatMap((c) => c.operations));

/** Operations without a command of their own, and why. */
const NOT_COMMANDS: Readonly<Record<string, string>> = {
  'admin:fundBudgetByQuery':
    'the same funding as fundBudget (budgets fund), at a query-string path',
  'runtime:createReservation': 'an agent’s work, through the SDKs',
  'runtime:commitReservation': 'an agent’s work, through the SDKs',
  'runtime:chargeReservation': 'an agent’s work, through the SDKs (or POST …/charges)',
  'runtime:releaseReservation': 'an agent’s own release; the operator’s is reservations release',
  'runtime:extendReservation': 'an agent’s work, through the SDKs',
  'runtime:decide': 'an agent’s work, through the SDKs',
  'runtime:createEvent': 'an agent’s work, through the SDKs',
};

describe('the commands (cli/commands/index.ts)', () => {
  it('cover every operation of the admin document, and the runtime reads', () => {
    const missing = [
      ...operationIds('admin').map((id) => `admin:${id}`),
      ...operationIds('runtime').map((id) => `runtime:${id}`),
    ].filter((op) => !declared.has(op as never) && !(op in NOT_COMMANDS));

    expect(missing).toEqual([]);
  });

  it('name only operations the documents have', () => {
    const known = new Set([
      ...operationIds('admin').map((id) => `admin:${id}`),
      ...operationIds('runtime').map((id) => `runtime:${id}`),
    ]);

    expect([...declared].filter((op) => !known.has(op))).toEqual([]);
    expect(Object.keys(NOT_COMMANDS).filter((op) => !known.has(op))).toEqual([]);
  });

  it('each have a summary, examples that call the CLI, and unique words', () => {
    const names = commands.map((c) => c.name);

    expect(new Set(names).size).toBe(names.length);
    for (const c of commands) {
      expect(c.summary, c.name).not.toBe('');
      expect(c.examples.length, c.name).toBeGreaterThan(0);
      for (const e of c.examples) expect(e, c.name).toContain(`budget-reservations ${c.name}`);
    }
  });
});

function fakeIo(env: Record<string, string> = {}, home = '/nonexistent') {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = {
    stdout: (t) => out.push(t),
    stderr: (t) => err.push(t),
    env,
    home,
    stdin: async () => '',
    signal: new AbortController().signal,
  };
  return { io, out: () => out.join(''), err: () => err.join('') };
}

describe('--help', () => {
  it('answers every command and group with its examples, exit 0, nothing sent', async () => {
    const groups = [
      ...new Set(
        commands
          .map((c) => c.name.split(' '))
          .filter((w) => w.length === 2)
          .map((w) => w[0] as string),
      ),
    ];

    for (const words of [
      [],
      ...groups.map((g) => [g]),
      ...commands.map((c) => c.name.split(' ')),
    ]) {
      const { io, out } = fakeIo();
      const code = await run([...words, '--help'], io);

      expect(code, words.join(' ')).toBe(EXIT.OK);
      expect(out(), words.join(' ')).toContain('Examples:');
    }
  });

  it('a wrong command line is exit 2, with the usage hint on stderr', async () => {
    for (const argv of [
      ['nope'],
      ['budgets', 'fund', 'tenant:a'],
      ['tenants', 'list', '--status', 'GONE'],
      ['budgets', 'create', 's', '--allocated', '1.5'],
    ]) {
      const { io, err } = fakeIo();

      expect(await run(argv, io), argv.join(' ')).toBe(EXIT.USAGE);
      expect(err(), argv.join(' ')).toMatch(/error/);
    }
  });
});

describe('exit codes', () => {
  const api = (status: number) => new ApiError({ status, code: 'INTERNAL_ERROR', message: 'x' });

  it('tell the error classes apart', () => {
    expect(exitCodeOf(api(400))).toBe(EXIT.USAGE);
    expect(exitCodeOf(api(401))).toBe(EXIT.AUTH);
    expect(exitCodeOf(api(403))).toBe(EXIT.AUTH);
    expect(exitCodeOf(api(404))).toBe(EXIT.NOT_FOUND);
    expect(exitCodeOf(api(409))).toBe(EXIT.REFUSED);
    expect(exitCodeOf(api(410))).toBe(EXIT.REFUSED);
    expect(exitCodeOf(api(429))).toBe(EXIT.UNAVAILABLE);
    expect(exitCodeOf(api(500))).toBe(EXIT.UNAVAILABLE);
    expect(exitCodeOf(api(503))).toBe(EXIT.UNAVAILABLE);
    expect(exitCodeOf(new TypeError('fetch failed'))).toBe(EXIT.UNAVAILABLE);
    expect(exitCodeOf(new CliError('no key', EXIT.AUTH))).toBe(EXIT.AUTH);
    expect(exitCodeOf(new Error('a bug'))).toBe(EXIT.OTHER);
  });
});

describe('configuration', () => {
  async function profileFile(content: unknown, mode = 0o600): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'cli-config-'));
    const file = join(dir, 'config.json');
    await writeFile(file, JSON.stringify(content));
    await chmod(file, mode);
    return file;
  }
  const profiles = {
    default_profile: 'local',
    profiles: {
      local: { admin_url: 'http://127.0.0.1:1111', admin_api_key: 'local-admin-key' },
      prod: {
        admin_url: 'https://admin.example.com',
        admin_api_key: 'prod-admin-key',
        tenant_api_key: 'prod-tenant-key',
      },
    },
  };
  const env = { ADMIN_URL: 'http://127.0.0.1:2222', ADMIN_API_KEY: 'env-admin-key' };

  it('defaults to the servers of `npm start`, with no key', async () => {
    const c = await resolveConfig({ flags: {}, env: {}, home: '/nonexistent' });

    expect(c).toMatchObject({
      adminUrl: 'http://localhost:7979',
      runtimeUrl: 'http://localhost:7878',
    });
    expect(c.adminKey).toBeUndefined();
    expect(c.configFile).toBe('/nonexistent/.config/budget-reservations/config.json');
  });

  it('takes flags over the environment over the default profile', async () => {
    const config = await profileFile(profiles);

    const fromEnv = await resolveConfig({ flags: { config }, env, home: '/x' });
    const fromFlag = await resolveConfig({
      flags: { config, adminUrl: 'http://127.0.0.1:3333' },
      env,
      home: '/x',
    });
    const fromProfile = await resolveConfig({ flags: { config }, env: {}, home: '/x' });

    expect([fromEnv.adminUrl, fromEnv.adminKey, fromEnv.sources.adminKey]).toEqual([
      'http://127.0.0.1:2222',
      'env-admin-key',
      'environment',
    ]);
    expect([fromFlag.adminUrl, fromFlag.sources.adminUrl]).toEqual([
      'http://127.0.0.1:3333',
      'flag',
    ]);
    expect([fromProfile.adminUrl, fromProfile.adminKey, fromProfile.sources.adminKey]).toEqual([
      'http://127.0.0.1:1111',
      'local-admin-key',
      'profile local',
    ]);
  });

  it('takes a profile named by --profile over the environment, so a local key never goes to it', async () => {
    const config = await profileFile(profiles);

    const c = await resolveConfig({ flags: { config, profile: 'prod' }, env, home: '/x' });
    const byEnv = await resolveConfig({
      flags: { config },
      env: { ...env, BUDGET_RESERVATIONS_PROFILE: 'prod' },
      home: '/x',
    });

    expect([c.adminUrl, c.adminKey, c.tenantKey]).toEqual([
      'https://admin.example.com',
      'prod-admin-key',
      'prod-tenant-key',
    ]);
    expect([byEnv.adminKey, byEnv.profile]).toEqual(['env-admin-key', 'prod']);
  });

  it('refuses an unknown profile, a malformed file or URL (exit 2), and warns of a file others may read', async () => {
    const config = await profileFile(profiles, 0o644);

    await expect(
      resolveConfig({ flags: { config, profile: 'nope' }, env: {}, home: '/x' }),
    ).rejects.toThrow(/no profile "nope".*local, prod/);
    await expect(
      resolveConfig({
        flags: { config: await profileFile({ profiles: { a: { admin_url: 'ftp://x' } } }) },
        env: {},
        home: '/x',
      }),
    ).rejects.toBeInstanceOf(CliError);
    await expect(
      resolveConfig({ flags: { adminUrl: 'not a url' }, env: {}, home: '/x' }),
    ).rejects.toThrow(/not an http/);
    expect((await resolveConfig({ flags: { config }, env: {}, home: '/x' })).warnings).toEqual([
      `${config} holds keys and others may read it: chmod 600 it`,
    ]);
  });

  it('masks keys: nothing of a short one, a prefix of a long one', () => {
    expect(mask('change-me')).toBe('********');
    expect(mask('cyc_live_09cG53QNeU6CTQAC6tMupwSYHLvenJxR')).toBe('cyc_li…(41 characters)');
  });
});

describe('bulk idempotency keys', () => {
  it('are the same for the same file and row, and differ by row and by content', () => {
    const file = 'scope,amount\ntenant:a,1\n';

    expect(derivedKey(file, 1)).toBe(derivedKey(file, 1));
    expect(derivedKey(file, 1)).not.toBe(derivedKey(file, 2));
    expect(derivedKey(file, 1)).not.toBe(derivedKey(`${file}tenant:b,2\n`, 1));
    expect(derivedKey(file, 1)).toMatch(/^bulk-[0-9a-f]{24}-1$/);
  });
});

describe('--rate-limits', () => {
  it('reads name=count pairs per minute, or none', () => {
    expect(rateLimitsOf('requests=600,reservations=100,commits=200')).toEqual({
      max_requests_per_minute: 600,
      max_reservations_per_minute: 100,
      max_commits_per_minute: 200,
    });
    expect(rateLimitsOf('none')).toBeNull();
    expect(rateLimitsText({ max_requests_per_minute: 600, max_commits_per_minute: 5 })).toBe(
      '600 requests/min, 5 commits/min',
    );
  });

  it('refuses an unknown name or a count that is not a number', () => {
    expect(() => rateLimitsOf('tokens=5')).toThrow(CliError);
    expect(() => rateLimitsOf('requests=many')).toThrow(CliError);
    expect(() => rateLimitsOf('requests')).toThrow(CliError);
  });
});
