import {
  newIdempotencyKey,
  RESERVATION_STATUSES,
  type Reservation,
  type ReservationStatus,
  unwrap,
} from '../../client/index.js';
import { CLI_NAME } from '../config.js';
import { amountText, morePages, record, table } from '../output.js';
import {
  defineCommand,
  listing,
  type OptionSpec,
  PAGE_OPTIONS,
  type PageOptions,
} from '../spec.js';

/** The subject filters of listings and balances: one option per standard level. */
export const SUBJECT_LEVELS = [
  'tenant',
  'workspace',
  'app',
  'workflow',
  'agent',
  'toolset',
] as const;
export type SubjectOptions = Partial<Record<(typeof SUBJECT_LEVELS)[number], string>>;
export const SUBJECT_OPTIONS: readonly OptionSpec[] = SUBJECT_LEVELS.map((level) => ({
  flags: `--${level} <${level}>`,
  description:
    level === 'tenant'
      ? 'the tenant (required with the admin key; a tenant key names its own)'
      : `only under this ${level}`,
}));
const subjectOf = (o: SubjectOptions) =>
  Object.fromEntries(SUBJECT_LEVELS.flatMap((l) => (o[l] === undefined ? [] : [[l, o[l]]])));

const ms = (t: number | undefined) => (t === undefined ? undefined : new Date(t).toISOString());

export const listReservations = defineCommand<
  PageOptions & SubjectOptions & { status?: ReservationStatus; idempotencyKey?: string }
>({
  name: 'reservations list',
  summary: 'List reservations of a tenant (newest first), by status and subject',
  details:
    'With the admin key (the default) name the tenant with --tenant; with --as tenant the tenant key lists its own, from the runtime server.',
  options: [
    ...SUBJECT_OPTIONS,
    {
      flags: '--status <status>',
      description: 'only reservations in this status',
      choices: RESERVATION_STATUSES,
    },
    { flags: '--idempotency-key <key>', description: 'the reservation made with this key' },
    ...PAGE_OPTIONS,
  ],
  examples: [
    `${CLI_NAME} reservations list --tenant acme --status ACTIVE`,
    `${CLI_NAME} reservations list --as tenant --workspace prod --json`,
  ],
  operations: ['admin:listReservations', 'runtime:listReservations'],
  async run(ctx, _args, o) {
    const asAdmin = (ctx.options.as ?? (ctx.config.adminKey ? 'admin' : 'tenant')) === 'admin';
    const query = { ...subjectOf(o), status: o.status, idempotency_key: o.idempotencyKey };
    const page = await listing(o, 'reservations', (q) =>
      asAdmin
        ? unwrap(
            ctx.admin('admin').GET('/v1/reservations', { params: { query: { ...query, ...q } } }),
          )
        : unwrap(
            ctx
              .runtime('tenant')
              .GET('/v1/reservations', { params: { query: { ...query, ...q } } }),
          ),
    );
    return {
      json: page,
      human: [
        ...table(page.reservations as Reservation[], [
          ['RESERVATION', (r) => r.reservation_id],
          ['STATUS', (r) => r.status],
          ['RESERVED', (r) => amountText(r.reserved)],
          ['COMMITTED', (r) => (r.committed ? r.committed.amount : '')],
          ['SCOPE', (r) => r.scope_path],
          ['ACTION', (r) => `${r.action.kind} ${r.action.name}`],
          ['CREATED', (r) => ms(r.created_at_ms)],
          ['EXPIRES', (r) => ms(r.expires_at_ms)],
        ]),
        ...morePages(page),
      ],
    };
  },
});

export const getReservation = defineCommand({
  name: 'reservations get',
  summary: 'Show a reservation (with the tenant key: the runtime server answers a tenant’s own)',
  arguments: [{ name: 'reservation-id', description: 'its id' }],
  examples: [`${CLI_NAME} reservations get rsv_0123456789abcdef`],
  operations: ['runtime:getReservation'],
  async run(ctx, [id]) {
    const r = await unwrap(
      ctx.runtime('tenant').GET('/v1/reservations/{reservation_id}', {
        params: { path: { reservation_id: id as string } },
      }),
    );
    return {
      json: r,
      human: record([
        ['reservation', r.reservation_id],
        ['status', r.status],
        ['idempotency key', r.idempotency_key],
        ['subject', JSON.stringify(r.subject)],
        ['action', `${r.action.kind} ${r.action.name}`],
        ['reserved', r.reserved],
        ['committed', r.committed],
        ['scopes', r.affected_scopes],
        ['created', ms(r.created_at_ms)],
        ['expires', ms(r.expires_at_ms)],
        ['finalized', ms(r.finalized_at_ms)],
      ]),
    };
  },
});

export const releaseReservation = defineCommand<{ reason: string; idempotencyKey?: string }>({
  name: 'reservations release',
  summary: 'Force-release a reservation of any tenant (admin key): its hold goes back',
  details: 'The reason lands in the audit trail. Safe to retry with the same --idempotency-key.',
  aliases: ['force-release'],
  arguments: [{ name: 'reservation-id', description: 'its id (reservations list shows it)' }],
  options: [
    { flags: '--reason <text>', description: 'why (kept in the audit trail)', required: true },
    { flags: '--idempotency-key <key>', description: 'the key that makes a retry safe' },
  ],
  examples: [`${CLI_NAME} reservations release rsv_0123456789abcdef --reason "stuck agent"`],
  operations: ['admin:releaseReservation'],
  async run(ctx, [id], o) {
    const released = await unwrap(
      ctx.admin('admin').POST('/v1/reservations/{reservation_id}/release', {
        params: { path: { reservation_id: id as string } },
        body: {
          idempotency_key: o.idempotencyKey ?? newIdempotencyKey('cli-release'),
          reason: o.reason,
        },
      }),
    );
    return {
      json: released,
      human: [
        `Reservation ${id} is ${released.status}; ${amountText(released.released)} went back.`,
      ],
    };
  },
});
