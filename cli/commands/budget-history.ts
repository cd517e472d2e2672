import { type Budget, type Unit, unwrap } from '../../client/index.js';
import { CLI_NAME } from '../config.js';
import { amountText, morePages, table } from '../output.js';
import { defineCommand, integer, listing, PAGE_OPTIONS, type PageOptions } from '../spec.js';
import { budgetQuery, SCOPE, UNIT_OPTION } from './budgets.js';

/** A budget over time: its closed periods, and its balance as it changes. */

export const budgetPeriods = defineCommand<PageOptions & { unit: Unit }>({
  name: 'budgets periods',
  summary: 'The closed periods of a rolling budget, newest first',
  arguments: [SCOPE],
  options: [UNIT_OPTION, ...PAGE_OPTIONS],
  examples: [`${CLI_NAME} budgets periods tenant:acme/workspace:research`],
  operations: ['admin:listBudgetPeriods'],
  async run(ctx, [scope], o) {
    const api = ctx.admin('either');
    const page = await listing(o, 'periods', (q) =>
      unwrap(
        api.GET('/v1/admin/budgets/periods', {
          params: { query: { ...q, scope: scope as string, unit: o.unit } },
        }),
      ),
    );
    return {
      json: page,
      human: [
        ...table(page.periods, [
          ['START', (p) => p.period_start],
          ['END', (p) => p.period_end],
          ['ALLOCATED', (p) => p.allocated.amount],
          ['SPENT', (p) => p.spent.amount],
          ['RESERVED', (p) => p.reserved.amount],
          ['REMAINING', (p) => p.remaining.amount],
          ['DEBT', (p) => p.debt.amount],
        ]),
        ...morePages(page),
      ],
    };
  },
});

export const watchBudget = defineCommand<{ unit: Unit; interval: number; count?: number }>({
  name: 'budgets watch',
  summary: 'Watch a budget’s balance: a line whenever it changes, until Ctrl-C',
  details:
    'Polls the budget every --interval seconds and prints the first reading and each change (with --json, one body per line). Ctrl-C ends it with exit 0.',
  arguments: [SCOPE],
  options: [
    UNIT_OPTION,
    {
      flags: '--interval <seconds>',
      description: 'between readings',
      default: 2,
      parse: integer(1),
    },
    { flags: '--count <n>', description: 'stop after this many readings', parse: integer(1) },
  ],
  examples: [
    `${CLI_NAME} budgets watch tenant:acme/workspace:prod`,
    `${CLI_NAME} budgets watch tenant:acme --interval 10 --json`,
  ],
  operations: ['admin:lookupBudget'],
  async run(ctx, [scope], o) {
    const api = ctx.admin('either');
    let last: string | undefined;
    for (let reading = 1; !ctx.io.signal.aborted; reading++) {
      const b = await unwrap(
        api.GET('/v1/admin/budgets/lookup', budgetQuery(scope as string, o.unit)),
      ).catch((error: unknown) => {
        if (ctx.io.signal.aborted) return undefined; // Ctrl-C while a reading was under way
        throw error;
      });
      if (!b) break;
      const state = JSON.stringify([
        b.allocated,
        b.spent,
        b.reserved,
        b.remaining,
        b.debt,
        b.status,
      ]);
      if (state !== last) {
        last = state;
        ctx.emitLine({ json: b, human: [watchLine(b)] });
      }
      if (o.count !== undefined && reading >= o.count) break;
      await ctx.sleep(o.interval * 1000);
    }
    return undefined;
  },
});

function watchLine(b: Budget): string {
  return [
    new Date().toISOString(),
    `remaining ${amountText(b.remaining)}`,
    `reserved ${b.reserved.amount}`,
    `spent ${b.spent.amount}`,
    `allocated ${b.allocated.amount}`,
    ...(b.debt.amount > 0 ? [`debt ${b.debt.amount}`] : []),
    ...(b.status !== 'ACTIVE' ? [b.status] : []),
  ].join('  ');
}
