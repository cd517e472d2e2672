import {
  type AdminSchemas,
  BUDGET_STATUSES,
  type BudgetStatus,
  newIdempotencyKey,
  TENANT_STATUSES,
  type TenantStatus,
  UNITS,
  type Unit,
  unwrap,
} from '../../client/index.js';
import { CLI_NAME } from '../config.js';
import { CliError, EXIT } from '../exit-codes.js';
import { morePages, type Output, record, table } from '../output.js';
import { defineCommand, integer, listing, PAGE_OPTIONS, type PageOptions } from '../spec.js';

// The reference's governance operations (issue 27): policies, the bulk actions, the overview.

type Policy = AdminSchemas['Policy'];
type PolicyBody = AdminSchemas['CreatePolicyBody'];
type BulkResult =
  | AdminSchemas['TenantBulkActionResponse']
  | AdminSchemas['BudgetBulkActionResponse'];

const POLICY_STATUSES = ['ACTIVE', 'DISABLED'] as const;
const OVERAGE_POLICIES = ['REJECT', 'ALLOW_IF_AVAILABLE', 'ALLOW_WITH_OVERDRAFT'] as const;
const TENANT_ACTIONS = ['SUSPEND', 'REACTIVATE', 'CLOSE'] as const;
const BUDGET_ACTIONS = [
  'CREDIT',
  'DEBIT',
  'RESET',
  'RESET_SPENT',
  'REPAY_DEBT',
  'FREEZE',
  'UNFREEZE',
] as const;

const policyRecord = (p: Policy): string[] =>
  record([
    ['policy', p.policy_id],
    ['name', p.name],
    ['scope pattern', p.scope_pattern],
    ['priority', p.priority],
    ['status', p.status],
    ['caps', p.caps && JSON.stringify(p.caps)],
    ['overage policy', p.commit_overage_policy],
    ['ttl', p.reservation_ttl_override && JSON.stringify(p.reservation_ttl_override)],
    ['rate limits', p.rate_limits && JSON.stringify(p.rate_limits)],
    ['effective', [p.effective_from, p.effective_until].filter(Boolean).join(' to ')],
  ]);

/** The options a policy's create and update share: what it sets on matching reservations. */
interface PolicyOptions {
  name?: string;
  description?: string;
  priority?: number;
  caps?: string;
  overagePolicy?: PolicyBody['commit_overage_policy'];
  defaultTtlMs?: number;
  maxTtlMs?: number;
  maxExtensions?: number;
  effectiveFrom?: string;
  effectiveUntil?: string;
}

const POLICY_OPTIONS = [
  { flags: '--description <text>', description: 'what it is for' },
  { flags: '--priority <n>', description: 'higher wins where patterns overlap', parse: integer(0) },
  {
    flags: '--caps <json>',
    description:
      'caps as JSON: {"max_tokens":…,"max_steps_remaining":…,"tool_allowlist":[…],"tool_denylist":[…],"cooldown_ms":…}',
  },
  {
    flags: '--overage-policy <policy>',
    description: 'the commit overage policy of reservations that name none',
    choices: OVERAGE_POLICIES,
  },
  {
    flags: '--default-ttl-ms <ms>',
    description: 'TTL of reservations that name none',
    parse: integer(1000),
  },
  {
    flags: '--max-ttl-ms <ms>',
    description: 'longest TTL a reservation gets',
    parse: integer(1000),
  },
  {
    flags: '--max-extensions <n>',
    description: 'extensions a reservation may have',
    parse: integer(0),
  },
  { flags: '--effective-from <time>', description: 'ISO 8601: in force from then' },
  { flags: '--effective-until <time>', description: 'ISO 8601: in force until then' },
];

function policyFields(o: PolicyOptions): Omit<PolicyBody, 'name' | 'scope_pattern'> {
  const ttl = {
    ...(o.defaultTtlMs !== undefined && { default_ttl_ms: o.defaultTtlMs }),
    ...(o.maxTtlMs !== undefined && { max_ttl_ms: o.maxTtlMs }),
    ...(o.maxExtensions !== undefined && { max_extensions: o.maxExtensions }),
  };
  let caps: PolicyBody['caps'];
  if (o.caps !== undefined) {
    try {
      caps = JSON.parse(o.caps);
    } catch {
      throw new CliError(`--caps: not JSON: ${o.caps}`);
    }
  }
  return {
    ...(o.description !== undefined && { description: o.description }),
    ...(o.priority !== undefined && { priority: o.priority }),
    ...(caps !== undefined && { caps }),
    ...(o.overagePolicy !== undefined && { commit_overage_policy: o.overagePolicy }),
    ...(Object.keys(ttl).length > 0 && { reservation_ttl_override: ttl }),
    ...(o.effectiveFrom !== undefined && { effective_from: o.effectiveFrom }),
    ...(o.effectiveUntil !== undefined && { effective_until: o.effectiveUntil }),
  };
}

export const listPolicies = defineCommand<
  PageOptions & { tenant?: string; status?: (typeof POLICY_STATUSES)[number] }
>({
  name: 'policies list',
  summary: 'List policies',
  options: [
    { flags: '--tenant <tenant>', description: 'only this tenant’s' },
    { flags: '--status <status>', description: 'only these', choices: POLICY_STATUSES },
    ...PAGE_OPTIONS,
  ],
  examples: [`${CLI_NAME} policies list --tenant acme`],
  operations: ['admin:listPolicies'],
  async run(ctx, _args, o) {
    const api = ctx.admin();
    const page = await listing(o, 'policies', (q) =>
      unwrap(
        api.GET('/v1/admin/policies', {
          params: { query: { ...q, tenant_id: o.tenant, status: o.status } },
        }),
      ),
    );
    return {
      json: page,
      human: [
        ...table(page.policies, [
          ['POLICY', (p) => p.policy_id],
          ['PATTERN', (p) => p.scope_pattern],
          ['PRIORITY', (p) => p.priority],
          ['STATUS', (p) => p.status],
          ['NAME', (p) => p.name],
        ]),
        ...morePages(page),
      ],
    };
  },
});

export const getPolicy = defineCommand({
  name: 'policies get',
  summary: 'Show a policy',
  arguments: [{ name: 'policy', description: 'its id' }],
  examples: [`${CLI_NAME} policies get pol_0123abcd`],
  operations: ['admin:getPolicy'],
  async run(ctx, [policy]) {
    const p = await unwrap(
      ctx.admin().GET('/v1/admin/policies/{policy_id}', {
        params: { path: { policy_id: policy as string } },
      }),
    );
    return { json: p, human: policyRecord(p) };
  },
});

export const createPolicy = defineCommand<PolicyOptions & { tenant: string; name: string }>({
  name: 'policies create',
  summary: 'Create a policy: caps and TTL limits for the reservations whose scopes match a pattern',
  details:
    'Enforced on reserve, dry run and decide within 5 s (docs/decisions.md § Policies); caps merge with the budgets’ by the strictest-wins rule.',
  arguments: [
    { name: 'pattern', description: 'a scope pattern, e.g. tenant:acme/agent:* or tenant:acme/**' },
  ],
  options: [
    { flags: '--tenant <tenant>', description: 'the tenant it belongs to', required: true },
    { flags: '--name <name>', description: 'its display name', required: true },
    ...POLICY_OPTIONS,
  ],
  examples: [
    `${CLI_NAME} policies create 'tenant:acme/agent:*' --tenant acme --name agents --max-ttl-ms 300000 --caps '{"max_tokens":4000}'`,
  ],
  operations: ['admin:createPolicy'],
  async run(ctx, [pattern], o) {
    const p = await unwrap(
      ctx.admin().POST('/v1/admin/policies', {
        body: {
          tenant_id: o.tenant,
          name: o.name,
          scope_pattern: pattern as string,
          ...policyFields(o),
        },
      }),
    );
    return { json: p, human: [`Policy ${p.policy_id} created.`, ...policyRecord(p)] };
  },
});

export const updatePolicy = defineCommand<
  PolicyOptions & { pattern?: string; status?: (typeof POLICY_STATUSES)[number] }
>({
  name: 'policies update',
  summary: 'Change a policy, or disable it (--status DISABLED)',
  arguments: [{ name: 'policy', description: 'its id' }],
  options: [
    { flags: '--name <name>', description: 'a new display name' },
    { flags: '--pattern <pattern>', description: 'a new scope pattern' },
    { flags: '--status <status>', description: 'a new status', choices: POLICY_STATUSES },
    ...POLICY_OPTIONS,
  ],
  examples: [
    `${CLI_NAME} policies update pol_0123abcd --status DISABLED`,
    `${CLI_NAME} policies update pol_0123abcd --priority 10 --max-ttl-ms 60000`,
  ],
  operations: ['admin:updatePolicy'],
  async run(ctx, [policy], o) {
    const body = {
      ...policyFields(o),
      ...(o.name !== undefined && { name: o.name }),
      ...(o.pattern !== undefined && { scope_pattern: o.pattern }),
      ...(o.status !== undefined && { status: o.status }),
    };
    if (Object.keys(body).length === 0) throw new CliError('nothing to change: give an option');
    const p = await unwrap(
      ctx.admin().PATCH('/v1/admin/policies/{policy_id}', {
        params: { path: { policy_id: policy as string } },
        body,
      }),
    );
    return { json: p, human: [`Policy ${p.policy_id} updated.`, ...policyRecord(p)] };
  },
});

/** A bulk action's answer: the counts, then each failed row (the exit code says whether any did). */
function bulkOutput(result: BulkResult): Output {
  const failed = result.failed.length;
  return {
    json: result,
    human: [
      `${result.action}: ${result.total_matched} matched, ${result.succeeded.length} done, ${result.skipped.length} skipped, ${failed} failed (idempotency key ${result.idempotency_key}).`,
      ...(failed > 0
        ? table(result.failed, [
            ['ID', (r) => r.id],
            ['ERROR', (r) => r.error_code],
            ['MESSAGE', (r) => r.message],
          ])
        : []),
    ],
    // Some rows failed: the work was done, not all of it (as a bulk file's, cli/commands/bulk.ts).
    ...(failed > 0 && { exitCode: EXIT.OTHER }),
  };
}

const BULK_OPTIONS = [
  {
    flags: '--expected-count <n>',
    description: 'refuse (409) unless exactly this many match: the count you reviewed',
    parse: integer(0),
  },
  {
    flags: '--idempotency-key <key>',
    description: 'the key that makes a retry safe (made and printed when not given)',
  },
  { flags: '--search <text>', description: 'only those whose id or name holds this' },
];

export const bulkTenants = defineCommand<{
  status?: TenantStatus;
  parent?: string;
  search?: string;
  expectedCount?: number;
  idempotencyKey?: string;
  yes?: boolean;
}>({
  name: 'tenants bulk-action',
  summary: 'Suspend, reactivate or close every tenant a filter matches (at most 500)',
  details:
    'Each tenant is the single operation, audited on its own; a retry with the same --idempotency-key answers the same result. CLOSE cannot be undone: it needs --yes.',
  arguments: [{ name: 'action', description: TENANT_ACTIONS.join(', ') }],
  options: [
    {
      flags: '--status <status>',
      description: 'only tenants in this status',
      choices: TENANT_STATUSES,
    },
    { flags: '--parent <tenant>', description: 'only children of this tenant' },
    ...BULK_OPTIONS,
    { flags: '--yes', description: 'confirm a CLOSE' },
  ],
  examples: [
    `${CLI_NAME} tenants bulk-action SUSPEND --status ACTIVE --search trial- --expected-count 12`,
  ],
  operations: ['admin:bulkActionTenants'],
  async run(ctx, [action], o) {
    if (!(TENANT_ACTIONS as readonly string[]).includes(action as string)) {
      throw new CliError(`action must be one of ${TENANT_ACTIONS.join(', ')}, not ${action}`);
    }
    if (action === 'CLOSE' && !o.yes) throw new CliError('CLOSE cannot be undone: add --yes');
    const result = await unwrap(
      ctx.admin().POST('/v1/admin/tenants/bulk-action', {
        body: {
          action: action as (typeof TENANT_ACTIONS)[number],
          filter: {
            ...(o.status && { status: o.status }),
            ...(o.parent && { parent_tenant_id: o.parent }),
            ...(o.search && { search: o.search }),
          },
          ...(o.expectedCount !== undefined && { expected_count: o.expectedCount }),
          idempotency_key: o.idempotencyKey ?? newIdempotencyKey('cli-bulk'),
        },
      }),
    );
    return bulkOutput(result);
  },
});

export const bulkBudgets = defineCommand<{
  tenant: string;
  scopePrefix?: string;
  unit?: Unit;
  status?: BudgetStatus;
  amount?: number;
  reason?: string;
  search?: string;
  expectedCount?: number;
  idempotencyKey?: string;
}>({
  name: 'budgets bulk-action',
  summary: 'Fund, freeze or unfreeze every budget of a tenant a filter matches (at most 500)',
  details:
    'Each budget is the single operation (its funding row keyed by the request’s key and the budget), audited on its own; a retry with the same --idempotency-key answers the same result.',
  arguments: [{ name: 'action', description: BUDGET_ACTIONS.join(', ') }],
  options: [
    { flags: '--tenant <tenant>', description: 'the tenant whose budgets', required: true },
    { flags: '--scope-prefix <scope>', description: 'only scopes under this one' },
    { flags: '--unit <unit>', description: 'only this unit (and the amount’s)', choices: UNITS },
    {
      flags: '--status <status>',
      description: 'only budgets in this status',
      choices: BUDGET_STATUSES,
    },
    { flags: '--amount <n>', description: 'the funding amount, in --unit', parse: integer(0) },
    { flags: '--reason <text>', description: 'why (kept in the audit trail)' },
    ...BULK_OPTIONS,
  ],
  examples: [
    `${CLI_NAME} budgets bulk-action CREDIT --tenant acme --unit USD_MICROCENTS --amount 1000000 --expected-count 3`,
    `${CLI_NAME} budgets bulk-action FREEZE --tenant acme --scope-prefix tenant:acme/workspace:dev`,
  ],
  operations: ['admin:bulkActionBudgets'],
  async run(ctx, [action], o) {
    if (!(BUDGET_ACTIONS as readonly string[]).includes(action as string)) {
      throw new CliError(`action must be one of ${BUDGET_ACTIONS.join(', ')}, not ${action}`);
    }
    const funding = action !== 'FREEZE' && action !== 'UNFREEZE';
    if (funding && (o.amount === undefined || o.unit === undefined)) {
      throw new CliError(`${action} needs --amount and --unit`);
    }
    const result = await unwrap(
      ctx.admin().POST('/v1/admin/budgets/bulk-action', {
        body: {
          action: action as (typeof BUDGET_ACTIONS)[number],
          filter: {
            tenant_id: o.tenant,
            ...(o.scopePrefix && { scope_prefix: o.scopePrefix }),
            ...(o.unit && { unit: o.unit }),
            ...(o.status && { status: o.status }),
            ...(o.search && { search: o.search }),
          },
          ...(funding && { amount: { unit: o.unit as Unit, amount: o.amount as number } }),
          ...(o.reason && { reason: o.reason }),
          ...(o.expectedCount !== undefined && { expected_count: o.expectedCount }),
          idempotency_key: o.idempotencyKey ?? newIdempotencyKey('cli-bulk'),
        },
      }),
    );
    return bulkOutput(result);
  },
});

export const overview = defineCommand({
  name: 'overview',
  summary:
    'The operator overview: tenants and budgets by status, over limit, in debt, recent refusals',
  examples: [`${CLI_NAME} overview`, `${CLI_NAME} overview --json`],
  operations: ['admin:getAdminOverview'],
  async run(ctx) {
    const o = await unwrap(ctx.admin().GET('/v1/admin/overview'));
    const t = o.tenant_counts;
    const b = o.budget_counts;
    return {
      json: o,
      human: [
        ...record([
          ['as of', o.as_of],
          [
            'tenants',
            `${t.total} (${t.active} active, ${t.suspended} suspended, ${t.closed} closed)`,
          ],
          [
            'budgets',
            `${b.total} (${b.active} active, ${b.frozen} frozen, ${b.closed} closed; ${b.over_limit} over limit, ${b.with_debt} in debt)`,
          ],
          [
            `refusals (${o.event_window_seconds} s)`,
            Object.entries(o.recent_denials_by_reason ?? {})
              .map(([reason, n]) => `${reason} ${n}`)
              .join(', ') || 'none',
          ],
        ]),
        ...(o.debt_scopes.length > 0
          ? [
              '',
              'In debt:',
              ...table(o.debt_scopes, [
                ['SCOPE', (s) => s.scope],
                ['UNIT', (s) => s.unit],
                ['DEBT', (s) => s.debt],
              ]),
            ]
          : []),
      ],
    };
  },
});
