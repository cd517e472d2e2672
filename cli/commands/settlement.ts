import {
  type AccuracyFigures,
  type Charge,
  type ChargePage,
  type EstimateAccuracy,
  newIdempotencyKey,
  type Refunded,
  type Unit,
  unwrap,
} from '../../client/index.js';
import { CLI_NAME } from '../config.js';
import type { Context } from '../context.js';
import { CliError } from '../exit-codes.js';
import { amountText, morePages, record, table } from '../output.js';
import { defineCommand, integer, listing, PAGE_OPTIONS, type PageOptions } from '../spec.js';
import { budgetQuery, SCOPE, UNIT_OPTION } from './budgets.js';

// Our extensions (x-extension budget-reservations, docs/decisions.md): a reservation's charges,
// refunds of what reservations and events charged, and how good a budget's estimates are.
// Charging is an agent's work (the SDKs, or POST …/charges); reading and refunding an
// operator's.

export const ms = (t: number) => new Date(t).toISOString();

function amountOf(text: string): number {
  try {
    return integer(1)(text);
  } catch (error) {
    throw new CliError(`amount: ${(error as Error).message}`);
  }
}
export const asAdmin = (ctx: Context) =>
  (ctx.options.as ?? (ctx.config.adminKey ? 'admin' : 'tenant')) === 'admin';

export const listCharges = defineCommand<PageOptions>({
  name: 'reservations charges',
  summary: 'List a reservation’s charges (parts of its actual), with what it charged and holds',
  details:
    'The admin key lists any tenant’s; with --as tenant the tenant key lists its own, from the runtime server.',
  arguments: [{ name: 'reservation-id', description: 'its id (reservations list shows it)' }],
  options: PAGE_OPTIONS,
  examples: [`${CLI_NAME} reservations charges rsv_0123456789abcdef --all`],
  operations: ['admin:listCharges', 'runtime:listCharges'],
  async run(ctx, [id], o) {
    const path = { reservation_id: id as string };
    const admin = asAdmin(ctx);
    let last: ChargePage | undefined;
    const merged = await listing(o, 'charges', async (query) => {
      last = await unwrap(
        admin
          ? ctx.admin('admin').GET('/v1/reservations/{reservation_id}/charges', {
              params: { path, query },
            })
          : ctx.runtime('tenant').GET('/v1/reservations/{reservation_id}/charges', {
              params: { path, query },
            }),
      );
      return last;
    });
    // --all merges the pages' charges; the totals are those of the last page read.
    const page: ChargePage = { ...(last as unknown as ChargePage), ...merged };
    return {
      json: page,
      human: [
        ...record([
          ['status', page.status],
          ['charged', page.charged_total],
          ['held', page.held],
          ['refunded', page.refunded_total],
        ]),
        '',
        ...table(page.charges as Charge[], [
          ['#', (c) => c.sequence],
          ['CHARGE', (c) => c.charge_id],
          ['AMOUNT', (c) => c.amount.amount],
          ['CREATED', (c) => ms(c.created_at_ms)],
        ]),
        `(amounts in ${page.charged_total.unit})`,
        ...morePages(page),
      ],
    };
  },
});

type RefundOptions = { unit: Unit; reason: string; idempotencyKey?: string };

const REFUND_OPTIONS = [
  UNIT_OPTION,
  { flags: '--reason <text>', description: 'why (kept in the audit trail)', required: true },
  { flags: '--idempotency-key <key>', description: 'the key that makes a retry safe' },
];

type RefundBody = {
  idempotency_key: string;
  amount: { unit: Unit; amount: number };
  reason: string;
};

/** One refund: its body from the options (a fresh key unless given), sent, printed. */
async function refund(
  o: RefundOptions,
  amount: string | undefined,
  send: (body: RefundBody) => Parameters<typeof unwrap<Refunded>>[0],
) {
  const idempotencyKey = o.idempotencyKey ?? newIdempotencyKey('cli-refund');
  const refunded = await unwrap(
    send({
      idempotency_key: idempotencyKey,
      amount: { unit: o.unit, amount: amountOf(amount as string) },
      reason: o.reason,
    }),
  );
  return { json: refunded, human: refundLines(refunded, idempotencyKey) };
}

function refundLines(r: Refunded, idempotencyKey: string): string[] {
  const what = 'reservation_id' in r ? `reservation ${r.reservation_id}` : `event ${r.event_id}`;
  return [
    `Refunded ${amountText(r.amount)} of ${what} on ${r.balances.length} scope(s).`,
    ...record([
      ['refunded so far', r.refunded_total],
      ['left to refund', r.refundable],
      ['idempotency key', idempotencyKey],
    ]),
  ];
}

export const refundReservation = defineCommand<RefundOptions>({
  name: 'reservations refund',
  summary:
    'Refund part of what a reservation charged: its budgets get it back (admin key or budgets:write)',
  details:
    'At most what it charged and not yet refunded (its charges, or once committed its whole actual), on every scope it charged. Safe to retry with the same --idempotency-key.',
  arguments: [
    { name: 'reservation-id', description: 'its id' },
    { name: 'amount', description: 'a whole number of the unit' },
  ],
  options: REFUND_OPTIONS,
  examples: [
    `${CLI_NAME} reservations refund rsv_0123456789abcdef 20000 --reason "provider refunded the call"`,
  ],
  operations: ['admin:refundReservation', 'runtime:refundReservation'],
  run: (ctx, [id, amount], o) =>
    refund(o, amount, (body) => {
      const params = { path: { reservation_id: id as string } };
      return asAdmin(ctx)
        ? ctx.admin('admin').POST('/v1/reservations/{reservation_id}/refunds', { params, body })
        : ctx.runtime('tenant').POST('/v1/reservations/{reservation_id}/refunds', { params, body });
    }),
});

export const refundEvent = defineCommand<RefundOptions>({
  name: 'events refund',
  summary: 'Refund part of what a usage event charged (admin key or budgets:write)',
  details:
    'At most its actual, less earlier refunds. Safe to retry with the same --idempotency-key.',
  arguments: [
    { name: 'event-id', description: 'its id (POST /v1/events answered it)' },
    { name: 'amount', description: 'a whole number of the unit' },
  ],
  options: REFUND_OPTIONS,
  examples: [`${CLI_NAME} events refund evt_0123456789abcdef 500 --reason "search call failed"`],
  operations: ['admin:refundEvent', 'runtime:refundEvent'],
  run: (ctx, [id, amount], o) =>
    refund(o, amount, (body) => {
      const params = { path: { event_id: id as string } };
      return asAdmin(ctx)
        ? ctx.admin('admin').POST('/v1/events/{event_id}/refunds', { params, body })
        : ctx.runtime('tenant').POST('/v1/events/{event_id}/refunds', { params, body });
    }),
});

export const budgetAccuracy = defineCommand<{ unit: Unit }>({
  name: 'budgets accuracy',
  summary: 'How good the estimates of reservations settled on a budget were, per action kind',
  details:
    'Per kind: settled reservations, Σ estimate and Σ actual, their ratio, the estimate that would have covered 95 % of actuals, and the unit-seconds held but never spent. Aggregated from the table’s stream, seconds behind.',
  arguments: [SCOPE],
  options: [UNIT_OPTION],
  examples: [`${CLI_NAME} budgets accuracy tenant:acme/workspace:prod`],
  operations: ['admin:getEstimateAccuracy'],
  async run(ctx, [scope], o) {
    const a: EstimateAccuracy = await unwrap(
      ctx.admin('either').GET('/v1/admin/budgets/accuracy', budgetQuery(scope as string, o.unit)),
    );
    const rows: [string, AccuracyFigures][] = [
      ...a.kinds.map((k): [string, AccuracyFigures] => [k.kind, k]),
      ['(other)', a.other],
      ['(all)', a.total],
    ];
    return {
      json: a,
      human: [
        `Estimates on ${a.scope} (${a.unit}):`,
        ...table(rows, [
          ['KIND', ([kind]) => kind],
          ['SETTLED', ([, f]) => f.settled],
          ['ESTIMATED', ([, f]) => f.estimate_total.amount],
          ['ACTUAL', ([, f]) => f.actual_total.amount],
          ['ACTUAL/EST', ([, f]) => f.actual_to_estimate?.toFixed(2)],
          ['SUGGESTED', ([, f]) => f.suggested_estimate?.amount],
          ['IDLE UNIT-S', ([, f]) => Math.round(f.held_unspent_unit_seconds)],
          ['RELEASED', ([, f]) => f.released],
          ['EXPIRED', ([, f]) => f.expired],
        ]),
      ],
    };
  },
});
