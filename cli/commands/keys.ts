import {
  type ApiKey,
  KEY_STATUSES,
  type KeyStatus,
  PERMISSIONS,
  type Permission,
  unwrap,
} from '../../client/index.js';
import { CLI_NAME, ENV } from '../config.js';
import { CliError, EXIT } from '../exit-codes.js';
import { morePages, record, table } from '../output.js';
import { defineCommand, list, listing, PAGE_OPTIONS, type PageOptions } from '../spec.js';

const keyRecord = (k: ApiKey): string[] =>
  record([
    ['key id', k.key_id],
    ['tenant', k.tenant_id],
    ['name', k.name],
    ['description', k.description],
    ['prefix', k.key_prefix],
    ['permissions', k.permissions],
    ['status', k.status],
    ['created', k.created_at],
    ['expires', k.expires_at],
    ['rate limits', k.rate_limits && rateLimitsText(k.rate_limits)],
    ['revoked', k.revoked_at && `${k.revoked_at} (${k.revoked_reason ?? 'no reason given'})`],
  ]);

/** `--permissions a,b`: each one of PERMISSIONS. */
export function permissionsOf(value: string): Permission[] {
  const given = list(value);
  const unknown = given.filter((p) => !(PERMISSIONS as readonly string[]).includes(p));
  if (unknown.length > 0) {
    throw new CliError(
      `unknown permission ${unknown.join(', ')}; one of: ${PERMISSIONS.join(', ')}`,
    );
  }
  return given as Permission[];
}

export type RateLimits = NonNullable<ApiKey['rate_limits']>;
const RATE_LIMIT_NAMES = {
  requests: 'max_requests_per_minute',
  reservations: 'max_reservations_per_minute',
  commits: 'max_commits_per_minute',
} as const;

/** `--rate-limits requests=600,reservations=100,commits=200` (per minute), or `none` (null). */
export function rateLimitsOf(value: string): RateLimits | null {
  if (value === 'none') return null;
  const limits: Record<string, number> = {};
  for (const part of list(value)) {
    const [name, count] = part.split('=');
    const field = RATE_LIMIT_NAMES[name as keyof typeof RATE_LIMIT_NAMES];
    if (!field || !/^\d+$/.test(count ?? '')) {
      throw new CliError(
        `rate limit ${part}: give name=count per minute, name one of ${Object.keys(RATE_LIMIT_NAMES).join(', ')} (or none)`,
      );
    }
    limits[field] = Number(count);
  }
  return limits as RateLimits;
}

export const rateLimitsText = (limits: RateLimits): string =>
  Object.entries(RATE_LIMIT_NAMES)
    .flatMap(([name, field]) =>
      limits[field] === undefined ? [] : [`${limits[field]} ${name}/min`],
    )
    .join(', ');

export const RATE_LIMITS_HELP =
  'per minute, e.g. requests=600,reservations=100,commits=200; none: no limits of its own (docs/decisions.md § Rate limits)';

const PERMISSIONS_HELP = `comma-separated, of: ${PERMISSIONS.join(', ')} (default: all of them)`;

export const listKeys = defineCommand<PageOptions & { tenant?: string; status?: KeyStatus }>({
  name: 'keys list',
  summary: 'List API keys (never a secret: id, prefix, permissions, status)',
  options: [
    { flags: '--tenant <tenant>', description: 'only this tenant’s keys' },
    { flags: '--status <status>', description: 'only keys in this status', choices: KEY_STATUSES },
    ...PAGE_OPTIONS,
  ],
  examples: [
    `${CLI_NAME} keys list --tenant acme`,
    `${CLI_NAME} keys list --tenant acme --status ACTIVE --json`,
  ],
  operations: ['admin:listApiKeys'],
  async run(ctx, _args, o) {
    const api = ctx.admin();
    const page = await listing(o, 'keys', (q) =>
      unwrap(
        api.GET('/v1/admin/api-keys', {
          params: { query: { ...q, tenant_id: o.tenant, status: o.status } },
        }),
      ),
    );
    return {
      json: page,
      human: [
        ...table(page.keys, [
          ['KEY ID', (k) => k.key_id],
          ['TENANT', (k) => k.tenant_id],
          ['NAME', (k) => k.name],
          ['PREFIX', (k) => k.key_prefix],
          ['STATUS', (k) => k.status],
          [
            'PERMISSIONS',
            (k) => (k.permissions.length === PERMISSIONS.length ? 'all' : k.permissions.join(',')),
          ],
          ['CREATED', (k) => k.created_at],
        ]),
        ...morePages(page),
      ],
    };
  },
});

export const getKey = defineCommand({
  name: 'keys get',
  summary: 'Show an API key',
  arguments: [{ name: 'key-id', description: 'its id (keys list shows it)' }],
  examples: [`${CLI_NAME} keys get key_0123456789abcdef`],
  operations: ['admin:getApiKey'],
  async run(ctx, [keyId]) {
    const k = await unwrap(
      ctx
        .admin()
        .GET('/v1/admin/api-keys/{key_id}', { params: { path: { key_id: keyId as string } } }),
    );
    return { json: k, human: keyRecord(k) };
  },
});

export const createKey = defineCommand<{
  name: string;
  description?: string;
  permissions?: Permission[];
  expiresAt?: string;
  rateLimits?: RateLimits | null;
}>({
  name: 'keys create',
  summary: 'Create a tenant API key; its secret is printed this once',
  details: `Store the secret at once: the service keeps only its hash. For scripts: --field key_secret prints the secret alone. Many at once: keys create-many.`,
  arguments: [{ name: 'tenant', description: 'the tenant it belongs to' }],
  options: [
    { flags: '--name <name>', description: 'what it is for', required: true },
    { flags: '--description <text>', description: 'more about it' },
    { flags: '--permissions <list>', description: PERMISSIONS_HELP, parse: permissionsOf },
    {
      flags: '--expires-at <time>',
      description: 'when it stops working (ISO 8601, e.g. 2027-01-01T00:00:00Z)',
    },
    { flags: '--rate-limits <limits>', description: RATE_LIMITS_HELP, parse: rateLimitsOf },
  ],
  examples: [
    `${CLI_NAME} keys create acme --name agents`,
    `KEY=$(${CLI_NAME} keys create acme --name reader --permissions balances:read,reservations:list --field key_secret)`,
  ],
  operations: ['admin:createApiKey'],
  async run(ctx, [tenant], o) {
    const k = await unwrap(
      ctx.admin().POST('/v1/admin/api-keys', {
        body: {
          tenant_id: tenant as string,
          name: o.name,
          ...(o.description && { description: o.description }),
          ...(o.permissions && { permissions: o.permissions }),
          ...(o.expiresAt && { expires_at: o.expiresAt }),
          ...(o.rateLimits && { rate_limits: o.rateLimits }),
        },
      }),
    );
    return {
      json: k,
      human: [
        `Key ${k.key_id} created for ${k.tenant_id}.`,
        ...record([
          ['name', k.name],
          ['prefix', k.key_prefix],
          ['permissions', k.permissions],
          ['expires', k.expires_at],
          ['rate limits', k.rate_limits && rateLimitsText(k.rate_limits)],
        ]),
        '',
        'Secret (shown this once; store it now):',
        k.key_secret,
      ],
    };
  },
});

export const updateKey = defineCommand<{
  name?: string;
  description?: string;
  permissions?: Permission[];
  rateLimits?: RateLimits | null;
}>({
  name: 'keys update',
  summary: 'Rename an API key, describe it, or change its permissions or rate limits',
  arguments: [{ name: 'key-id', description: 'its id' }],
  options: [
    { flags: '--name <name>', description: 'a new name' },
    { flags: '--description <text>', description: 'a new description' },
    {
      flags: '--permissions <list>',
      description: `the new permissions, ${PERMISSIONS_HELP.replace(' (default: all of them)', '')}`,
      parse: permissionsOf,
    },
    { flags: '--rate-limits <limits>', description: RATE_LIMITS_HELP, parse: rateLimitsOf },
  ],
  examples: [
    `${CLI_NAME} keys update key_0123456789abcdef --permissions balances:read`,
    `${CLI_NAME} keys update key_0123456789abcdef --rate-limits requests=600,reservations=100`,
  ],
  operations: ['admin:updateApiKey'],
  async run(ctx, [keyId], o) {
    const body = {
      ...(o.name !== undefined && { name: o.name }),
      ...(o.description !== undefined && { description: o.description }),
      ...(o.permissions !== undefined && { permissions: o.permissions }),
      ...(o.rateLimits !== undefined && { rate_limits: o.rateLimits }),
    };
    if (Object.keys(body).length === 0)
      throw new CliError(
        'nothing to change: give --name, --description, --permissions or --rate-limits',
      );
    const k = await unwrap(
      ctx.admin().PATCH('/v1/admin/api-keys/{key_id}', {
        params: { path: { key_id: keyId as string } },
        body,
      }),
    );
    return { json: k, human: [`Key ${k.key_id} updated.`, ...keyRecord(k)] };
  },
});

export const revokeKey = defineCommand<{ reason?: string }>({
  name: 'keys revoke',
  summary: 'Revoke an API key: refused everywhere within 5 s',
  arguments: [{ name: 'key-id', description: 'its id' }],
  options: [
    { flags: '--reason <text>', description: 'why (kept with the key and in the audit trail)' },
  ],
  examples: [`${CLI_NAME} keys revoke key_0123456789abcdef --reason rotated`],
  operations: ['admin:revokeApiKey'],
  async run(ctx, [keyId], o) {
    const k = await unwrap(
      ctx.admin().DELETE('/v1/admin/api-keys/{key_id}', {
        params: { path: { key_id: keyId as string }, query: { reason: o.reason } },
      }),
    );
    return { json: k, human: [`Key ${k.key_id} revoked.`, ...keyRecord(k)] };
  },
});

export const validateKey = defineCommand<{ stdin?: boolean }>({
  name: 'keys validate',
  summary: 'Check a tenant key: its tenant, id and permissions, or why it is not valid',
  details: `Checks the configured tenant key (${ENV.tenantKey} or the profile's tenant_api_key), or with --stdin a key read from standard input: a secret is never a command-line argument. Exit 0 when valid, 4 when not.`,
  aliases: ['check'],
  options: [{ flags: '--stdin', description: 'read the key to check from standard input' }],
  examples: [`${CLI_NAME} keys validate`, `echo "$KEY" | ${CLI_NAME} keys validate --stdin`],
  operations: ['admin:validateKey'],
  async run(ctx, _args, o) {
    const secret = o.stdin ? (await ctx.io.stdin()).trim() : ctx.config.tenantKey;
    if (!secret) {
      throw new CliError(
        `no key to check: set ${ENV.tenantKey} or pipe one to --stdin`,
        EXIT.USAGE,
      );
    }
    const v = await unwrap(ctx.admin().POST('/v1/auth/validate', { body: { key_secret: secret } }));
    return {
      json: v,
      human: v.valid
        ? [
            'The key is valid.',
            ...record([
              ['tenant', v.tenant_id],
              ['key id', v.key_id],
              ['permissions', v.permissions],
              ['expires', v.expires_at],
            ]),
          ]
        : [`The key is not valid: ${v.reason}.`],
      exitCode: v.valid ? EXIT.OK : EXIT.REFUSED,
    };
  },
});
