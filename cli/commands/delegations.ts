import {
  type Delegation,
  type DelegationPage,
  newIdempotencyKey,
  type Unit,
  unwrap,
} from '../../client/index.js';
import { CLI_NAME } from '../config.js';
import { CliError } from '../exit-codes.js';
import { morePages, record, table } from '../output.js';
import { defineCommand, integer, listing, PAGE_OPTIONS, type PageOptions } from '../spec.js';
import { UNIT_OPTION } from './budgets.js';
import { asAdmin, ms } from './settlement.js';

// Sub-agent budgets (ours, docs/decisions.md § Delegations): a reservation's children, and a
// delegation made by hand (an agent makes its own through POST …/delegations).

export const listDelegations = defineCommand<PageOptions>({
  name: 'reservations delegations',
  summary: 'List a reservation’s delegations (child reservations) with their state and use',
  details:
    'The admin key lists any tenant’s; with --as tenant the tenant key lists its own, from the runtime server.',
  arguments: [{ name: 'reservation-id', description: 'the parent’s id' }],
  options: PAGE_OPTIONS,
  examples: [`${CLI_NAME} reservations delegations rsv_0123456789abcdef --all`],
  operations: ['admin:listDelegations', 'runtime:listDelegations'],
  async run(ctx, [id], o) {
    const path = { reservation_id: id as string };
    const admin = asAdmin(ctx);
    let last: DelegationPage | undefined;
    const merged = await listing(o, 'delegations', async (query) => {
      last = await unwrap(
        admin
          ? ctx.admin('admin').GET('/v1/reservations/{reservation_id}/delegations', {
              params: { path, query },
            })
          : ctx.runtime('tenant').GET('/v1/reservations/{reservation_id}/delegations', {
              params: { path, query },
            }),
      );
      return last;
    });
    const page: DelegationPage = { ...(last as unknown as DelegationPage), ...merged };
    return {
      json: page,
      human: [
        ...record([
          ['status', page.status],
          ['held', page.held],
        ]),
        '',
        ...table(page.delegations as Delegation[], [
          ['CHILD', (d) => d.reservation_id],
          ['STATUS', (d) => d.status],
          ['DEPTH', (d) => d.depth],
          ['RESERVED', (d) => d.reserved.amount],
          ['HELD', (d) => d.held.amount],
          ['CHARGED', (d) => d.charged.amount],
          ['CHILDREN', (d) => d.active_delegations],
          ['EXPIRES', (d) => ms(d.expires_at_ms)],
        ]),
        `(amounts in ${page.held.unit})`,
        ...morePages(page),
      ],
    };
  },
});

type DelegateOptions = { unit: Unit; ttlMs?: string; agent?: string; idempotencyKey?: string };

export const delegateReservation = defineCommand<DelegateOptions>({
  name: 'reservations delegate',
  summary: 'Hand part of an ACTIVE reservation’s hold to a child reservation (tenant key)',
  details:
    'The child holds the amount out of the parent’s hold (the budget is moved, not taken again) and is extended, committed and released by its id like any reservation; what it does not use returns to the parent. Safe to retry with the same --idempotency-key.',
  arguments: [
    { name: 'reservation-id', description: 'the parent’s id' },
    { name: 'amount', description: 'a whole number of the unit' },
  ],
  options: [
    UNIT_OPTION,
    { flags: '--ttl-ms <ms>', description: 'the child’s TTL (at most what the parent has left)' },
    { flags: '--agent <name>', description: 'an agent level below the parent’s path (its budget)' },
    { flags: '--idempotency-key <key>', description: 'the key that makes a retry safe' },
  ],
  examples: [`${CLI_NAME} reservations delegate rsv_0123456789abcdef 200000 --agent researcher`],
  operations: ['runtime:delegateReservation'],
  async run(ctx, [id, amount], o) {
    const idempotencyKey = o.idempotencyKey ?? newIdempotencyKey('cli-delegate');
    let value: number;
    try {
      value = integer(1)(amount as string);
    } catch (error) {
      throw new CliError(`amount: ${(error as Error).message}`);
    }
    const child = await unwrap(
      ctx.runtime('tenant').POST('/v1/reservations/{reservation_id}/delegations', {
        params: { path: { reservation_id: id as string } },
        body: {
          idempotency_key: idempotencyKey,
          amount: { unit: o.unit, amount: value },
          ...(o.ttlMs !== undefined && { ttl_ms: integer(1_000)(o.ttlMs) }),
          ...(o.agent !== undefined && { subject: { agent: o.agent } }),
        },
      }),
    );
    const childId = 'reservation_id' in child ? child.reservation_id : '';
    const expires = 'expires_at_ms' in child ? ms(child.expires_at_ms) : '';
    return {
      json: child,
      human: [
        `Delegated ${value} ${o.unit} of ${id as string} to ${childId}.`,
        ...record([
          ['scope path', child.scope_path],
          ['expires', expires],
          ['idempotency key', idempotencyKey],
        ]),
      ],
    };
  },
});
