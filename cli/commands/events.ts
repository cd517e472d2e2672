import {
  EVENT_CATEGORIES,
  EVENT_TYPES,
  type EventCategory,
  type EventDocument,
  type EventType,
  unwrap,
} from '../../client/index.js';
import { CLI_NAME } from '../config.js';
import { morePages, record, table } from '../output.js';
import { defineCommand, listing, PAGE_OPTIONS, type PageOptions } from '../spec.js';

const eventRows = (events: readonly EventDocument[]) =>
  table(events, [
    ['TIME', (e) => e.timestamp],
    ['TYPE', (e) => e.event_type],
    ['TENANT', (e) => e.tenant_id],
    ['SCOPE', (e) => e.scope ?? ''],
    ['ID', (e) => e.event_id],
  ]);

export const listEvents = defineCommand<
  PageOptions & {
    tenant?: string;
    type?: EventType;
    category?: EventCategory;
    scope?: string;
    correlationId?: string;
    traceId?: string;
    requestId?: string;
    search?: string;
    from?: string;
    to?: string;
    oldestFirst?: boolean;
  }
>({
  name: 'events list',
  summary: 'The event log, newest first: budget state, reservations, lifecycle changes',
  details:
    'With the admin key: every tenant’s events (or --tenant’s). With a tenant key (--as tenant): its own, of the budget, reservation and tenant categories.',
  options: [
    { flags: '--tenant <tenant>', description: 'only this tenant’s (admin key)' },
    { flags: '--type <type>', description: 'only this event type', choices: EVENT_TYPES },
    {
      flags: '--category <category>',
      description: 'only this category',
      choices: EVENT_CATEGORIES,
    },
    { flags: '--scope <prefix>', description: 'only scopes starting with this' },
    { flags: '--correlation-id <id>', description: 'only events of this correlation' },
    { flags: '--trace-id <id>', description: 'only events of this trace (admin key)' },
    { flags: '--request-id <id>', description: 'only events of this request (admin key)' },
    { flags: '--search <text>', description: 'correlation id or scope contains this (admin key)' },
    { flags: '--from <time>', description: 'from this time (ISO 8601)' },
    { flags: '--to <time>', description: 'up to this time (ISO 8601)' },
    { flags: '--oldest-first', description: 'oldest first (admin key)' },
    ...PAGE_OPTIONS,
  ],
  examples: [
    `${CLI_NAME} events list --tenant acme --category budget --limit 20`,
    `${CLI_NAME} events list --type budget.threshold_crossed --from 2026-12-01T00:00:00Z --all --json`,
  ],
  operations: ['admin:listEvents', 'admin:listTenantEvents'],
  async run(ctx, _args, o) {
    const api = ctx.admin('either');
    const common = {
      event_type: o.type,
      category: o.category,
      scope: o.scope,
      correlation_id: o.correlationId,
      from: o.from,
      to: o.to,
    };
    const page = await listing(o, 'events', (q) =>
      ctx.asTenant()
        ? unwrap(api.GET('/v1/events', { params: { query: { ...q, ...common } } }))
        : unwrap(
            api.GET('/v1/admin/events', {
              params: {
                query: {
                  ...q,
                  ...common,
                  tenant_id: o.tenant,
                  trace_id: o.traceId,
                  request_id: o.requestId,
                  search: o.search,
                  ...(o.oldestFirst && { sort_dir: 'asc' as const }),
                },
              },
            }),
          ),
    );
    return { json: page, human: [...eventRows(page.events), ...morePages(page)] };
  },
});

export const getEvent = defineCommand({
  name: 'events get',
  summary: 'Show one event: the document its webhook deliveries carried',
  arguments: [{ name: 'event-id', description: 'its id (events list shows it)' }],
  examples: [`${CLI_NAME} events get evt_0123456789abcdef0123456789abcdef`],
  operations: ['admin:getEvent'],
  async run(ctx, [id]) {
    const e = await unwrap(
      ctx
        .admin()
        .GET('/v1/admin/events/{event_id}', { params: { path: { event_id: id as string } } }),
    );
    return {
      json: e,
      human: [
        ...record([
          ['event id', e.event_id],
          ['type', e.event_type],
          ['time', e.timestamp],
          ['tenant', e.tenant_id],
          ['scope', e.scope],
          ['actor', e.actor && `${e.actor.type}${e.actor.key_id ? ` ${e.actor.key_id}` : ''}`],
          ['correlation', e.correlation_id],
          ['request', e.request_id],
          ['trace', e.trace_id],
        ]),
        JSON.stringify(e.data ?? {}, null, 2),
      ],
    };
  },
});
