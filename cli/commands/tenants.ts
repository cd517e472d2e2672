import { TENANT_STATUSES, type Tenant, type TenantStatus, unwrap } from '../../client/index.js';
import { CLI_NAME } from '../config.js';
import type { Context } from '../context.js';
import { CliError } from '../exit-codes.js';
import { morePages, type Output, record, table } from '../output.js';
import { defineCommand, listing, PAGE_OPTIONS, type PageOptions } from '../spec.js';
import { RATE_LIMITS_HELP, type RateLimits, rateLimitsOf, rateLimitsText } from './keys.js';

const tenantRecord = (t: Tenant): string[] =>
  record([
    ['tenant', t.tenant_id],
    ['name', t.name],
    ['status', t.status],
    ['created', t.created_at],
    ['updated', t.updated_at],
    ['rate limits', t.rate_limits && rateLimitsText(t.rate_limits)],
  ]);

export const listTenants = defineCommand<PageOptions & { status?: TenantStatus }>({
  name: 'tenants list',
  summary: 'List tenants',
  options: [
    {
      flags: '--status <status>',
      description: 'only tenants in this status',
      choices: TENANT_STATUSES,
    },
    ...PAGE_OPTIONS,
  ],
  examples: [
    `${CLI_NAME} tenants list`,
    `${CLI_NAME} tenants list --status SUSPENDED --all --json`,
  ],
  operations: ['admin:listTenants'],
  async run(ctx, _args, o) {
    const api = ctx.admin();
    const page = await listing(o, 'tenants', (q) =>
      unwrap(api.GET('/v1/admin/tenants', { params: { query: { ...q, status: o.status } } })),
    );
    return {
      json: page,
      human: [
        ...table(page.tenants, [
          ['TENANT', (t) => t.tenant_id],
          ['NAME', (t) => t.name],
          ['STATUS', (t) => t.status],
          ['CREATED', (t) => t.created_at],
        ]),
        ...morePages(page),
      ],
    };
  },
});

export const getTenant = defineCommand({
  name: 'tenants get',
  summary: 'Show a tenant',
  arguments: [{ name: 'tenant', description: 'its id' }],
  examples: [`${CLI_NAME} tenants get acme`],
  operations: ['admin:getTenant'],
  async run(ctx, [tenant]) {
    const t = await unwrap(
      ctx.admin().GET('/v1/admin/tenants/{tenant_id}', {
        params: { path: { tenant_id: tenant as string } },
      }),
    );
    return { json: t, human: tenantRecord(t) };
  },
});

export const createTenant = defineCommand<{ name: string }>({
  name: 'tenants create',
  summary: 'Create a tenant',
  details:
    'A tenant id that exists already is refused (exit 4, DUPLICATE_RESOURCE). Many at once: tenants create-many.',
  arguments: [{ name: 'tenant', description: 'its id: letters, digits, _ . - (at most 64)' }],
  options: [{ flags: '--name <name>', description: 'its display name', required: true }],
  examples: [`${CLI_NAME} tenants create acme --name "Acme Corp"`],
  operations: ['admin:createTenant'],
  async run(ctx, [tenant], o) {
    const t = await unwrap(
      ctx
        .admin()
        .POST('/v1/admin/tenants', { body: { tenant_id: tenant as string, name: o.name } }),
    );
    return { json: t, human: [`Tenant ${t.tenant_id} created.`, ...tenantRecord(t)] };
  },
});

async function updateTenant(
  ctx: Context,
  tenant: string,
  body: { name?: string; status?: TenantStatus; rate_limits?: RateLimits | null },
): Promise<Output> {
  const t = await unwrap(
    ctx
      .admin()
      .PATCH('/v1/admin/tenants/{tenant_id}', { params: { path: { tenant_id: tenant } }, body }),
  );
  return { json: t, human: [`Tenant ${t.tenant_id} is ${t.status}.`, ...tenantRecord(t)] };
}

export const renameTenant = defineCommand<{
  name?: string;
  status?: TenantStatus;
  rateLimits?: RateLimits | null;
}>({
  name: 'tenants update',
  summary: 'Rename a tenant, change its status or its request-rate limits',
  details: 'Prefer suspend, resume and close for the status: they say what they do.',
  arguments: [{ name: 'tenant', description: 'its id' }],
  options: [
    { flags: '--name <name>', description: 'a new display name' },
    { flags: '--status <status>', description: 'a new status', choices: TENANT_STATUSES },
    {
      flags: '--rate-limits <limits>',
      description: RATE_LIMITS_HELP.replace('of its own', ''),
      parse: rateLimitsOf,
    },
  ],
  examples: [
    `${CLI_NAME} tenants update acme --name "Acme Corporation"`,
    `${CLI_NAME} tenants update acme --rate-limits requests=6000,reservations=1200`,
  ],
  operations: ['admin:updateTenant'],
  async run(ctx, [tenant], o) {
    if (o.name === undefined && o.status === undefined && o.rateLimits === undefined)
      throw new CliError('nothing to change: give --name, --status or --rate-limits');
    return updateTenant(ctx, tenant as string, {
      ...(o.name && { name: o.name }),
      ...(o.status && { status: o.status }),
      ...(o.rateLimits !== undefined && { rate_limits: o.rateLimits }),
    });
  },
});

export const suspendTenant = defineCommand({
  name: 'tenants suspend',
  summary:
    'Suspend a tenant: new reservations are refused (403) within 5 s; open ones still settle',
  arguments: [{ name: 'tenant', description: 'its id' }],
  examples: [`${CLI_NAME} tenants suspend acme`],
  operations: ['admin:updateTenant'],
  run: (ctx, [tenant]) => updateTenant(ctx, tenant as string, { status: 'SUSPENDED' }),
});

export const resumeTenant = defineCommand({
  name: 'tenants resume',
  summary: 'Resume a suspended tenant',
  arguments: [{ name: 'tenant', description: 'its id' }],
  examples: [`${CLI_NAME} tenants resume acme`],
  operations: ['admin:updateTenant'],
  run: (ctx, [tenant]) => updateTenant(ctx, tenant as string, { status: 'ACTIVE' }),
});

export const closeTenant = defineCommand<{ yes?: boolean }>({
  name: 'tenants close',
  summary: 'Close a tenant for good: its keys are revoked and its open reservations released',
  details: 'Permanent. Repeating it finishes a close that was interrupted.',
  arguments: [{ name: 'tenant', description: 'its id' }],
  options: [{ flags: '--yes', description: 'confirm: closing cannot be undone', required: true }],
  examples: [`${CLI_NAME} tenants close acme --yes`],
  operations: ['admin:updateTenant'],
  run: (ctx, [tenant]) => updateTenant(ctx, tenant as string, { status: 'CLOSED' }),
});
