import {
  type AdminSchemas,
  BUDGET_STATUSES,
  type Budget,
  type BudgetStatus,
  type Caps,
  FUND_OPERATIONS,
  type FundOperation,
  newIdempotencyKey,
  PERIOD_KINDS,
  type PeriodKind,
  UNITS,
  type Unit,
  unwrap,
} from '../../client/index.js';
import { CLI_NAME } from '../config.js';
import type { Context } from '../context.js';
import { CliError } from '../exit-codes.js';
import { morePages, record, table } from '../output.js';
import {
  defineCommand,
  integer,
  list,
  listing,
  type OptionSpec,
  PAGE_OPTIONS,
  type PageOptions,
} from '../spec.js';

export const UNIT_OPTION: OptionSpec = {
  flags: '--unit <unit>',
  description: 'the budget’s unit',
  choices: UNITS,
  default: 'USD_MICROCENTS',
};
export const SCOPE = {
  name: 'scope',
  description: 'the budget’s scope, e.g. tenant:acme/workspace:prod',
};
const amount = integer(0);

export function budgetLines(b: Budget | AdminSchemas['Budget']): string[] {
  return record([
    ['scope', b.scope],
    ['unit', b.unit],
    ['status', 'status' in b ? b.status : undefined],
    ['allocated', b.allocated.amount],
    ['spent', b.spent.amount],
    ['reserved', b.reserved.amount],
    ['remaining', b.remaining.amount],
    ['debt', b.debt.amount],
    ['overdraft limit', b.overdraft_limit.amount],
    ['over limit', b.is_over_limit ? 'yes' : undefined],
    ['period', b.period && `${b.period} (${b.period_start} to ${b.period_end})`],
    ['caps', 'caps' in b && b.caps ? JSON.stringify(b.caps) : undefined],
    [
      'caps apply below',
      'caps_when_remaining_below_bps' in b && b.caps_when_remaining_below_bps !== undefined
        ? `${b.caps_when_remaining_below_bps / 100} % remaining`
        : undefined,
    ],
    ['thresholds', b.thresholds && `${b.thresholds.join(', ') || 'none'} (% used)`],
    ['escrow shards', 'shards' in b ? b.shards : undefined],
    ['max per reservation', b.max_reservation_amount?.amount],
    ['created', b.created_at],
  ]);
}

/** The caps flags of create and update. */
const CAPS_OPTIONS: readonly OptionSpec[] = [
  { flags: '--max-tokens <n>', description: 'cap: max tokens per call', parse: integer(0) },
  { flags: '--max-steps <n>', description: 'cap: max steps remaining', parse: integer(0) },
  { flags: '--tool-allow <tools>', description: 'cap: comma-separated tools allowed', parse: list },
  { flags: '--tool-deny <tools>', description: 'cap: comma-separated tools denied', parse: list },
  { flags: '--cooldown-ms <ms>', description: 'cap: cooldown between calls', parse: integer(0) },
  {
    flags: '--caps-below-bps <bps>',
    description:
      'apply the caps only once remaining is below this share of allocated, in basis points (2000 = 20 %)',
    parse: integer(1),
  },
  {
    flags: '--thresholds <percents>',
    description:
      'budget.threshold_crossed events at these % used, e.g. 50,80,100 (none: no events)',
    parse: (v) => list(v).map(integer(1)),
  },
];
interface CapsOptions {
  maxTokens?: number;
  maxSteps?: number;
  toolAllow?: string[];
  toolDeny?: string[];
  cooldownMs?: number;
  capsBelowBps?: number;
  thresholds?: number[];
}

function capsOf(o: CapsOptions): Caps | undefined {
  const caps: Caps = {
    ...(o.maxTokens !== undefined && { max_tokens: o.maxTokens }),
    ...(o.maxSteps !== undefined && { max_steps_remaining: o.maxSteps }),
    ...(o.toolAllow !== undefined && { tool_allowlist: o.toolAllow }),
    ...(o.toolDeny !== undefined && { tool_denylist: o.toolDeny }),
    ...(o.cooldownMs !== undefined && { cooldown_ms: o.cooldownMs }),
  };
  return Object.keys(caps).length > 0 ? caps : undefined;
}

export const budgetQuery = (scope: string, unit: Unit) => ({ params: { query: { scope, unit } } });

export const listBudgets = defineCommand<
  PageOptions & { tenant?: string; scopePrefix?: string; unit?: Unit; status?: BudgetStatus }
>({
  name: 'budgets list',
  summary: 'List budgets, with what is allocated, spent, reserved and remaining',
  options: [
    { flags: '--tenant <tenant>', description: 'only this tenant’s budgets' },
    { flags: '--scope-prefix <scope>', description: 'only budgets at or under this scope' },
    { flags: '--unit <unit>', description: 'only budgets in this unit', choices: UNITS },
    {
      flags: '--status <status>',
      description: 'only budgets in this status',
      choices: BUDGET_STATUSES,
    },
    ...PAGE_OPTIONS,
  ],
  examples: [
    `${CLI_NAME} budgets list --tenant acme`,
    `${CLI_NAME} budgets list --tenant acme --status FROZEN --json`,
  ],
  operations: ['admin:listBudgets'],
  async run(ctx, _args, o) {
    const api = ctx.admin('either');
    const page = await listing(o, 'ledgers', (q) =>
      unwrap(
        api.GET('/v1/admin/budgets', {
          params: {
            query: {
              ...q,
              tenant_id: o.tenant,
              scope_prefix: o.scopePrefix,
              unit: o.unit,
              status: o.status,
            },
          },
        }),
      ),
    );
    return {
      json: page,
      human: [
        ...table(page.ledgers, [
          ['SCOPE', (b) => b.scope],
          ['UNIT', (b) => b.unit],
          ['STATUS', (b) => b.status],
          ['ALLOCATED', (b) => b.allocated.amount],
          ['SPENT', (b) => b.spent.amount],
          ['RESERVED', (b) => b.reserved.amount],
          ['REMAINING', (b) => b.remaining.amount],
          ['DEBT', (b) => b.debt.amount],
          ['PERIOD', (b) => b.period ?? ''],
        ]),
        ...morePages(page),
      ],
    };
  },
});

export const getBudget = defineCommand<{ unit: Unit }>({
  name: 'budgets get',
  summary: 'Show one budget',
  arguments: [SCOPE],
  options: [UNIT_OPTION],
  examples: [`${CLI_NAME} budgets get tenant:acme/workspace:prod`],
  operations: ['admin:lookupBudget'],
  async run(ctx, [scope], o) {
    const b = await unwrap(
      ctx.admin('either').GET('/v1/admin/budgets/lookup', budgetQuery(scope as string, o.unit)),
    );
    return { json: b, human: budgetLines(b) };
  },
});

/** The cap of one reservation (ours: x-extension budget-reservations). */
const MAX_RESERVATION_OPTION: OptionSpec = {
  flags: '--max-reservation <amount>',
  description: 'the most one reservation may hold (a larger estimate is refused)',
  parse: amount,
};

export const createBudget = defineCommand<
  CapsOptions & {
    unit: Unit;
    allocated: number;
    overdraftLimit?: number;
    maxReservation?: number;
    shards?: number;
    period?: PeriodKind;
    anchorDay?: number;
  }
>({
  name: 'budgets create',
  summary: 'Create a budget; its allocation is spendable at once',
  details:
    'A scope every reservation under it is held against. Busy budgets can be split into escrow shards (1-64), rolling ones start again each period (UTC). Many at once: budgets create-many.',
  arguments: [SCOPE],
  options: [
    {
      flags: '--allocated <amount>',
      description: 'the allocation, a whole number of the unit',
      parse: amount,
      required: true,
    },
    UNIT_OPTION,
    {
      flags: '--overdraft-limit <amount>',
      description: 'debt allowed by overdraft commits',
      parse: amount,
    },
    {
      flags: '--shards <n>',
      description: 'escrow shards for a busy budget (1-64)',
      parse: integer(1),
    },
    {
      flags: '--period <period>',
      description: 'roll over by itself each period',
      choices: PERIOD_KINDS,
    },
    {
      flags: '--anchor-day <day>',
      description: 'day of the week (1 = Monday) or month (1-28) a period starts',
      parse: integer(1),
    },
    MAX_RESERVATION_OPTION,
    ...CAPS_OPTIONS,
  ],
  examples: [
    `${CLI_NAME} budgets create tenant:acme --allocated 100000000`,
    `${CLI_NAME} budgets create tenant:acme/workspace:agents --allocated 25000000 --max-reservation 5000000`,
    `${CLI_NAME} budgets create tenant:acme/workspace:research --allocated 500000000 --period DAILY`,
    `${CLI_NAME} budgets create tenant:acme/workspace:prod --allocated 50000000 --shards 8 --max-tokens 2048 --tool-deny shell --caps-below-bps 2000`,
  ],
  operations: ['admin:createBudget'],
  async run(ctx, [scope], o) {
    const caps = capsOf(o);
    const b = await unwrap(
      ctx.admin('either').POST('/v1/admin/budgets', {
        body: {
          scope: scope as string,
          unit: o.unit,
          allocated: { unit: o.unit, amount: o.allocated },
          ...(o.overdraftLimit !== undefined && {
            overdraft_limit: { unit: o.unit, amount: o.overdraftLimit },
          }),
          ...(o.shards !== undefined && { shards: o.shards }),
          ...(o.maxReservation !== undefined && {
            max_reservation_amount: { unit: o.unit, amount: o.maxReservation },
          }),
          ...(o.period && { period: o.period }),
          ...(o.anchorDay !== undefined && { period_anchor_day: o.anchorDay }),
          ...(caps && { caps }),
          ...(o.capsBelowBps !== undefined && { caps_when_remaining_below_bps: o.capsBelowBps }),
          ...(o.thresholds !== undefined && { thresholds: o.thresholds }),
        },
      }),
    );
    return { json: b, human: [`Budget ${b.scope} (${b.unit}) created.`, ...budgetLines(b)] };
  },
});

export const updateBudget = defineCommand<
  CapsOptions & {
    unit: Unit;
    overdraftLimit?: number;
    shards?: number;
    clearCaps?: boolean;
    defaultThresholds?: boolean;
    maxReservation?: number;
    clearMaxReservation?: boolean;
  }
>({
  name: 'budgets update',
  summary:
    'Change a budget’s overdraft limit, caps, thresholds, cap of one reservation or shard count',
  details:
    'Caps given replace the budget’s caps (--clear-caps removes them). Shards only grow, while the budget serves (sent first, in a request of their own). To change the allocation, fund it.',
  arguments: [SCOPE],
  options: [
    UNIT_OPTION,
    { flags: '--overdraft-limit <amount>', description: 'a new overdraft limit', parse: amount },
    {
      flags: '--shards <n>',
      description: 'more escrow shards (never fewer; 1-64)',
      parse: integer(1),
    },
    MAX_RESERVATION_OPTION,
    { flags: '--clear-max-reservation', description: 'remove the cap of one reservation' },
    ...CAPS_OPTIONS,
    { flags: '--clear-caps', description: 'remove the budget’s caps' },
    { flags: '--default-thresholds', description: 'back to the default thresholds (50, 80, 100)' },
  ],
  examples: [
    `${CLI_NAME} budgets update tenant:acme --shards 32`,
    `${CLI_NAME} budgets update tenant:acme/workspace:prod --max-tokens 1024 --caps-below-bps 2000 --thresholds 80,100`,
  ],
  operations: ['admin:updateBudget'],
  async run(ctx, [scope], o) {
    const caps = capsOf(o);
    if (caps && o.clearCaps) throw new CliError('give caps or --clear-caps, not both');
    if (o.thresholds && o.defaultThresholds)
      throw new CliError('give --thresholds or --default-thresholds, not both');
    const body = {
      ...(o.overdraftLimit !== undefined && {
        overdraft_limit: { unit: o.unit, amount: o.overdraftLimit },
      }),
      ...(o.shards !== undefined && { shards: o.shards }),
      ...(caps && { caps }),
      ...(o.clearCaps && { caps: null }),
      ...(o.capsBelowBps !== undefined && { caps_when_remaining_below_bps: o.capsBelowBps }),
      ...(o.thresholds !== undefined && { thresholds: o.thresholds }),
      ...(o.defaultThresholds && { thresholds: null }),
      ...(o.maxReservation !== undefined && {
        max_reservation_amount: { unit: o.unit, amount: o.maxReservation },
      }),
      ...(o.clearMaxReservation && { max_reservation_amount: null }),
    };
    if (Object.keys(body).length === 0) throw new CliError('nothing to change (see --help)');
    // The server takes a shard count in a PATCH of its own (a growth rewrites the budget).
    const { shards, ...rest } = body;
    const api = ctx.admin('either');
    const query = budgetQuery(scope as string, o.unit);
    let b =
      shards === undefined
        ? undefined
        : await unwrap(api.PATCH('/v1/admin/budgets', { ...query, body: { shards } }));
    if (Object.keys(rest).length > 0 || !b) {
      b = await unwrap(api.PATCH('/v1/admin/budgets', { ...query, body: rest }));
    }
    return { json: b, human: [`Budget ${b.scope} (${b.unit}) updated.`, ...budgetLines(b)] };
  },
});

/** POST …/fund, shared by `budgets fund` and each row of `budgets fund-many`. */
export async function fund(
  ctx: Context,
  request: {
    scope: string;
    unit: Unit;
    operation: FundOperation;
    amount: number;
    idempotencyKey: string;
    reason?: string | undefined;
  },
) {
  return unwrap(
    ctx.admin('either').POST('/v1/admin/budgets/{scope}/{unit}/fund', {
      params: { path: { scope: request.scope, unit: request.unit } },
      body: {
        operation: request.operation,
        amount: { unit: request.unit, amount: request.amount },
        idempotency_key: request.idempotencyKey,
        ...(request.reason && { reason: request.reason }),
      },
    }),
  );
}

export const fundBudget = defineCommand<{ unit: Unit; idempotencyKey?: string; reason?: string }>({
  name: 'budgets fund',
  summary: 'Fund a budget: CREDIT, DEBIT, RESET, RESET_SPENT (a new period by hand) or REPAY_DEBT',
  details:
    'Safe to retry with the same --idempotency-key: applied once. Without one, a fresh key is made and printed, for a retry. Many at once: budgets fund-many.',
  arguments: [
    SCOPE,
    { name: 'operation', description: FUND_OPERATIONS.join(', ') },
    {
      name: 'amount',
      description:
        'a whole number of the unit (RESET_SPENT: the spent to start from, 0 when left out)',
      optional: true,
    },
  ],
  options: [
    UNIT_OPTION,
    { flags: '--idempotency-key <key>', description: 'the key that makes a retry safe' },
    { flags: '--reason <text>', description: 'why (kept in the audit trail)' },
  ],
  examples: [
    `${CLI_NAME} budgets fund tenant:acme/workspace:prod CREDIT 50000000 --idempotency-key fund-1`,
    `${CLI_NAME} budgets fund tenant:acme RESET_SPENT --idempotency-key period-2026-12`,
  ],
  operations: ['admin:fundBudget'],
  async run(ctx, [scope, operation, amountText_], o) {
    if (!(FUND_OPERATIONS as readonly string[]).includes(operation as string)) {
      throw new CliError(
        `operation must be one of ${FUND_OPERATIONS.join(', ')}, not ${operation}`,
      );
    }
    if (amountText_ === undefined && operation !== 'RESET_SPENT') {
      throw new CliError(`amount: required for ${operation} (only RESET_SPENT may leave it out)`);
    }
    const idempotencyKey = o.idempotencyKey ?? newIdempotencyKey('cli-fund');
    const funded = await fund(ctx, {
      scope: scope as string,
      unit: o.unit,
      operation: operation as FundOperation,
      amount: amountText_ === undefined ? 0 : amountOf(amountText_),
      idempotencyKey,
      reason: o.reason,
    });
    return {
      json: funded,
      human: [
        `${funded.operation} applied to ${funded.scope} (${funded.unit}).`,
        ...record([
          ['allocated', `${funded.previous_allocated.amount} -> ${funded.new_allocated.amount}`],
          ['remaining', `${funded.previous_remaining.amount} -> ${funded.new_remaining.amount}`],
          ['debt', `${funded.previous_debt.amount} -> ${funded.new_debt.amount}`],
          ['idempotency key', idempotencyKey],
        ]),
      ],
    };
  },
});

function amountOf(text: string): number {
  try {
    return amount(text);
  } catch (error) {
    throw new CliError(`amount: ${(error as Error).message}`);
  }
}

function freezeCommand(freeze: boolean) {
  return defineCommand<{ unit: Unit }>({
    name: freeze ? 'budgets freeze' : 'budgets unfreeze',
    summary: freeze
      ? 'Freeze a budget: new reservations under it are refused (409 BUDGET_FROZEN); open ones still settle'
      : 'Unfreeze a budget: it takes new reservations again',
    arguments: [SCOPE],
    options: [UNIT_OPTION],
    examples: [`${CLI_NAME} budgets ${freeze ? 'freeze' : 'unfreeze'} tenant:acme/workspace:prod`],
    operations: [freeze ? 'admin:freezeBudget' : 'admin:unfreezeBudget'],
    async run(ctx, [scope], o) {
      const api = ctx.admin('either');
      const query = budgetQuery(scope as string, o.unit);
      const b = await unwrap(
        freeze
          ? api.POST('/v1/admin/budgets/freeze', query)
          : api.POST('/v1/admin/budgets/unfreeze', query),
      );
      return {
        json: b,
        human: [`Budget ${b.scope} (${b.unit}) is ${b.status}.`, ...budgetLines(b)],
      };
    },
  });
}
export const freezeBudget = freezeCommand(true);
export const unfreezeBudget = freezeCommand(false);
