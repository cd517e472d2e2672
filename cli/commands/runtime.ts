import { unwrap } from '../../client/index.js';
import { CLI_NAME } from '../config.js';
import { morePages, record, table } from '../output.js';
import { defineCommand, listing, PAGE_OPTIONS, type PageOptions } from '../spec.js';
import { SUBJECT_LEVELS, SUBJECT_OPTIONS, type SubjectOptions } from './reservations.js';

export const balances = defineCommand<PageOptions & SubjectOptions & { includeChildren?: boolean }>(
  {
    name: 'balances',
    summary: 'A tenant’s balances by scope (tenant key, runtime server)',
    details:
      'What an agent with this key sees: each scope’s allocated, spent, reserved, remaining and debt. Without a subject option: the key’s own tenant.',
    options: [
      ...SUBJECT_OPTIONS,
      { flags: '--include-children', description: 'also every scope under the subject' },
      ...PAGE_OPTIONS,
    ],
    examples: [
      `${CLI_NAME} balances --workspace prod --include-children`,
      `${CLI_NAME} balances --json`,
    ],
    operations: ['runtime:getBalances', 'runtime:runtimeIntrospectAuth'],
    async run(ctx, _args, o) {
      const api = ctx.runtime('tenant');
      let subject: SubjectOptions = Object.fromEntries(
        SUBJECT_LEVELS.flatMap((l) => (o[l] === undefined ? [] : [[l, o[l]]])),
      );
      if (Object.keys(subject).length === 0) {
        const me = await unwrap(api.GET('/v1/auth/introspect'));
        subject = { tenant: me.tenant_id };
      }
      const page = await listing(o, 'balances', (q) =>
        unwrap(
          api.GET('/v1/balances', {
            params: {
              query: { ...subject, ...q, ...(o.includeChildren && { include_children: true }) },
            },
          }),
        ),
      );
      return {
        json: page,
        human: [
          ...table(page.balances, [
            ['SCOPE', (b) => b.scope],
            ['UNIT', (b) => b.remaining.unit],
            ['ALLOCATED', (b) => b.allocated.amount],
            ['SPENT', (b) => b.spent.amount],
            ['RESERVED', (b) => b.reserved.amount],
            ['REMAINING', (b) => b.remaining.amount],
            ['DEBT', (b) => b.debt.amount],
          ]),
          ...morePages(page),
        ],
      };
    },
  },
);

export const introspect = defineCommand({
  name: 'introspect',
  summary: 'What the key in use may do: its kind, tenant, permissions and capabilities',
  details:
    'The admin key asks the admin server; with --as tenant (or no admin key) the tenant key asks the runtime server.',
  aliases: ['whoami'],
  examples: [`${CLI_NAME} introspect`, `${CLI_NAME} introspect --as tenant`],
  operations: ['admin:adminIntrospectAuth', 'runtime:runtimeIntrospectAuth'],
  async run(ctx) {
    const asAdmin = (ctx.options.as ?? (ctx.config.adminKey ? 'admin' : 'tenant')) === 'admin';
    const me = asAdmin
      ? await unwrap(ctx.admin('admin').GET('/v1/auth/introspect'))
      : await unwrap(ctx.runtime('tenant').GET('/v1/auth/introspect'));
    const can = Object.entries(me.capabilities)
      .filter(([, allowed]) => allowed)
      .map(([name]) => name);
    return {
      json: me,
      human: record([
        ['key', me.auth_type],
        ['tenant', 'tenant_id' in me ? me.tenant_id : undefined],
        ['permissions', me.permissions],
        ['capabilities', can],
      ]),
    };
  },
});
