import { useEffect, useState } from 'preact/hooks';
import { EVENT_CATEGORIES, EVENT_TYPES, type EventDocument } from '../../../client/index.js';
import { oneOf, unwrap } from '../api.js';
import { ChoiceSelect, PagedResults, TableRegion, TenantSelect } from '../components.js';
import { useConsole } from '../context.js';
import { formatTime, utcInputToIso } from '../format.js';
import { usePaged } from '../hooks.js';
import { hrefOf, navigate, type Params } from '../router.js';

const FILTERS = [
  'tenant_id',
  'category',
  'event_type',
  'scope',
  'correlation_id',
  'trace_id',
  'request_id',
  'search',
  'from',
  'to',
] as const;
type Filters = Partial<Record<(typeof FILTERS)[number], string>>;

/** The filters in the URL (from and to as the UTC times typed) → the API's query. */
const queryOf = (f: Filters) => ({
  ...f,
  category: oneOf(EVENT_CATEGORIES, f.category),
  event_type: oneOf(EVENT_TYPES, f.event_type),
  from: utcInputToIso(f.from ?? '') || undefined,
  to: utcInputToIso(f.to ?? '') || undefined,
});

/**
 * GET /v1/admin/events: the event log, newest first, with the reference's filters; each event
 * opens to the document its webhook deliveries carried.
 */
export function Events({ params }: { readonly params: Params }) {
  const { client } = useConsole();
  const filters: Filters = Object.fromEntries(
    FILTERS.flatMap((f) => (params[f] ? [[f, params[f]]] : [])),
  );
  const query = queryOf(filters);
  const queryKey = JSON.stringify(query);
  const list = usePaged<EventDocument>(
    async (cursor) => {
      const page = await unwrap(
        client.GET('/v1/admin/events', { params: { query: { ...query, cursor, limit: 50 } } }),
      );
      return { items: page.events, cursor: page.next_cursor };
    },
    [client, queryKey],
  );
  return (
    <>
      <FilterForm filters={filters} />
      <section aria-labelledby="event-list">
        <div class="section-head">
          <h2 id="event-list">Events, newest first</h2>
          <button type="button" onClick={list.reload} disabled={list.loading}>
            Refresh
          </button>
        </div>
        <PagedResults list={list} what="events" empty={<p>No events match.</p>}>
          <TableRegion label="Events">
            <table>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Event</th>
                  <th scope="col">Tenant</th>
                  <th scope="col">Scope</th>
                  <th scope="col">Actor</th>
                  <th scope="col">Detail</th>
                </tr>
              </thead>
              <tbody>
                {list.items.map((e) => (
                  <tr key={e.event_id}>
                    <td>{formatTime(e.timestamp)}</td>
                    <th scope="row" class="mono">
                      {e.event_type}
                    </th>
                    <td class="mono">{e.tenant_id}</td>
                    <td class="mono">{e.scope ?? '—'}</td>
                    <td class="mono">
                      {e.actor
                        ? `${e.actor.type}${e.actor.key_id ? ` ${e.actor.key_id}` : ''}`
                        : '—'}
                    </td>
                    <td>
                      <EventDetail event={e} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableRegion>
        </PagedResults>
      </section>
    </>
  );
}

function EventDetail({ event: e }: { readonly event: EventDocument }) {
  return (
    <details>
      <summary>
        Document<span class="visually-hidden"> of {e.event_id}</span>
      </summary>
      <dl class="change">
        <dt>Event id</dt>
        <dd class="mono">{e.event_id}</dd>
        {e.correlation_id && (
          <>
            <dt>Correlation</dt>
            <dd class="mono">
              <a href={hrefOf('events', { correlation_id: e.correlation_id })}>
                {e.correlation_id}
              </a>
            </dd>
          </>
        )}
        {e.trace_id && (
          <>
            <dt>Trace</dt>
            <dd class="mono">
              <a href={hrefOf('events', { trace_id: e.trace_id })}>{e.trace_id}</a>
            </dd>
          </>
        )}
        {e.request_id && (
          <>
            <dt>Request</dt>
            <dd class="mono">{e.request_id}</dd>
          </>
        )}
        <dt>Data</dt>
        <dd>
          <pre>{JSON.stringify(e.data ?? {}, null, 1)}</pre>
        </dd>
      </dl>
    </details>
  );
}

function FilterForm({ filters }: { readonly filters: Filters }) {
  const [draft, setDraft] = useState<Filters>(filters);
  const filtersKey = JSON.stringify(filters);
  useEffect(() => setDraft(filters), [filtersKey]);
  const set = (name: keyof Filters) => (value: string | undefined) =>
    setDraft((d) => ({ ...d, [name]: value || undefined }));
  const text = (name: keyof Filters, label: string) => (
    <div class="field">
      <label for={`events-${name}`}>{label}</label>
      <input
        id={`events-${name}`}
        value={draft[name] ?? ''}
        onInput={(e) => set(name)(e.currentTarget.value)}
      />
    </div>
  );
  return (
    <form
      class="filters audit-filters"
      aria-label="Event filters"
      onSubmit={(e) => {
        e.preventDefault();
        navigate('events', draft);
      }}
    >
      <TenantSelect
        id="events-tenant"
        value={draft.tenant_id}
        anyLabel="All tenants"
        onChange={set('tenant_id')}
      />
      <ChoiceSelect
        id="events-category"
        label="Category"
        value={draft.category}
        options={EVENT_CATEGORIES}
        onChange={set('category')}
      />
      <ChoiceSelect
        id="events-type"
        label="Event type"
        value={draft.event_type}
        options={EVENT_TYPES}
        onChange={set('event_type')}
      />
      {text('scope', 'Scope starts with')}
      {text('search', 'Search (scope or correlation)')}
      {text('correlation_id', 'Correlation id')}
      {text('trace_id', 'Trace id')}
      {text('request_id', 'Request id')}
      <div class="field">
        <label for="events-from">From (UTC)</label>
        <input
          id="events-from"
          type="datetime-local"
          step={1}
          value={draft.from ?? ''}
          onInput={(e) => set('from')(e.currentTarget.value)}
        />
      </div>
      <div class="field">
        <label for="events-to">To (UTC)</label>
        <input
          id="events-to"
          type="datetime-local"
          step={1}
          value={draft.to ?? ''}
          onInput={(e) => set('to')(e.currentTarget.value)}
        />
      </div>
      <div class="field-button">
        <button type="submit" class="primary">
          Apply filters
        </button>{' '}
        <button type="button" onClick={() => navigate('events')}>
          Clear
        </button>
      </div>
    </form>
  );
}
