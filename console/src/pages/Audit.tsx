import { useEffect, useState } from 'preact/hooks';
import { AUDIT_OPERATIONS, AUDIT_RESOURCE_TYPES, type AuditEntry } from '../../../client/index.js';
import { collect, items, oneOf, unwrap } from '../api.js';
import {
  ChoiceSelect,
  ErrorMessage,
  PagedResults,
  TableRegion,
  TenantSelect,
} from '../components.js';
import { useConsole } from '../context.js';
import { auditCsv } from '../csv.js';
import { formatTime, utcInputToIso } from '../format.js';
import { useAction, usePaged } from '../hooks.js';
import { navigate, type Params } from '../router.js';

const FILTERS = [
  'tenant_id',
  'key_id',
  'operation',
  'resource_type',
  'resource_id',
  'from',
  'to',
] as const;
type Filters = Partial<Record<(typeof FILTERS)[number], string>>;

/** The filters in the URL (from and to as the UTC times typed) → the API's query. */
function queryOf(f: Filters) {
  return {
    ...f,
    operation: oneOf(AUDIT_OPERATIONS, f.operation),
    resource_type: oneOf(AUDIT_RESOURCE_TYPES, f.resource_type),
    from: utcInputToIso(f.from ?? '') || undefined,
    to: utcInputToIso(f.to ?? '') || undefined,
  };
}

/** GET /v1/admin/audit/logs with its filters, newest first; every matching entry as CSV. */
export function Audit({ params }: { readonly params: Params }) {
  const { client, notify } = useConsole();
  const filters: Filters = Object.fromEntries(
    FILTERS.flatMap((f) => (params[f] ? [[f, params[f]]] : [])),
  );
  const query = queryOf(filters);
  const queryKey = JSON.stringify(query);
  const list = usePaged<AuditEntry>(
    async (cursor) => {
      const page = await unwrap(
        client.GET('/v1/admin/audit/logs', { params: { query: { ...query, cursor, limit: 50 } } }),
      );
      return { items: page.logs, cursor: page.next_cursor };
    },
    [client, queryKey],
  );
  const exporter = useAction(async () => {
    const { items: entries, truncated } = await collect(
      items(
        (cursor) =>
          unwrap(
            client.GET('/v1/admin/audit/logs', {
              params: { query: { ...query, cursor, limit: 100 } },
            }),
          ),
        (page) => page.logs,
      ),
      10_000,
    );
    const url = URL.createObjectURL(
      new Blob([auditCsv(entries)], { type: 'text/csv;charset=utf-8' }),
    );
    const link = document.createElement('a');
    link.href = url;
    link.download = `audit-${new Date().toISOString().slice(0, 19).replaceAll(':', '')}Z.csv`;
    link.click();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
    notify(
      `Exported ${entries.length} audit entries${truncated ? ' (the first 10,000; narrow the filters for the rest)' : ''}.`,
    );
  });

  return (
    <>
      <FilterForm filters={filters} />
      <section aria-labelledby="audit-list">
        <div class="section-head">
          <h2 id="audit-list">Entries, newest first</h2>
          <button type="button" onClick={() => void exporter.run()} disabled={exporter.busy}>
            {exporter.busy ? 'Exporting…' : 'Export CSV'}
          </button>
        </div>
        <ErrorMessage error={exporter.error} />
        <PagedResults list={list} what="the audit trail" empty={<p>No entries match.</p>}>
          <TableRegion label="Audit trail">
            <table>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Operation</th>
                  <th scope="col">Resource</th>
                  <th scope="col">Tenant</th>
                  <th scope="col">Actor</th>
                  <th scope="col">Change</th>
                </tr>
              </thead>
              <tbody>
                {list.items.map((e) => (
                  <tr key={e.log_id}>
                    <td>{formatTime(e.timestamp)}</td>
                    <th scope="row">{e.operation}</th>
                    <td>
                      {e.resource_type}
                      <br />
                      <span class="mono muted">{e.resource_id}</span>
                    </td>
                    <td class="mono">{e.tenant_id}</td>
                    <td class="mono">{e.metadata.actor}</td>
                    <td>
                      <Change entry={e} />
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

function Change({ entry: e }: { readonly entry: AuditEntry }) {
  const { before, after, detail } = e.metadata;
  const reason = (detail as { reason?: unknown } | undefined)?.reason;
  return (
    <details>
      <summary>{typeof reason === 'string' ? `Reason: ${reason}` : 'Before and after'}</summary>
      <dl class="change">
        {before !== undefined && (
          <>
            <dt>Before</dt>
            <dd>
              <pre>{JSON.stringify(before, null, 1)}</pre>
            </dd>
          </>
        )}
        {after !== undefined && (
          <>
            <dt>After</dt>
            <dd>
              <pre>{JSON.stringify(after, null, 1)}</pre>
            </dd>
          </>
        )}
        {detail !== undefined && (
          <>
            <dt>Detail</dt>
            <dd>
              <pre>{JSON.stringify(detail, null, 1)}</pre>
            </dd>
          </>
        )}
        <dt>Request</dt>
        <dd class="mono">{e.request_id}</dd>
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
  return (
    <form
      class="filters audit-filters"
      aria-label="Audit filters"
      onSubmit={(e) => {
        e.preventDefault();
        navigate('audit', draft);
      }}
    >
      <TenantSelect
        id="audit-tenant"
        value={draft.tenant_id}
        anyLabel="All tenants"
        onChange={set('tenant_id')}
      />
      <div class="field">
        <label for="audit-actor">Actor (admin or a key id)</label>
        <input
          id="audit-actor"
          value={draft.key_id ?? ''}
          onInput={(e) => set('key_id')(e.currentTarget.value)}
        />
      </div>
      <ChoiceSelect
        id="audit-operation"
        label="Operation"
        value={draft.operation}
        options={AUDIT_OPERATIONS}
        onChange={set('operation')}
      />
      <ChoiceSelect
        id="audit-resource-type"
        label="Resource type"
        value={draft.resource_type}
        options={AUDIT_RESOURCE_TYPES}
        onChange={set('resource_type')}
      />
      <div class="field">
        <label for="audit-resource-id">Resource id</label>
        <input
          id="audit-resource-id"
          value={draft.resource_id ?? ''}
          onInput={(e) => set('resource_id')(e.currentTarget.value)}
        />
      </div>
      <div class="field">
        <label for="audit-from">From (UTC)</label>
        <input
          id="audit-from"
          type="datetime-local"
          step={1}
          value={draft.from ?? ''}
          onInput={(e) => set('from')(e.currentTarget.value)}
        />
      </div>
      <div class="field">
        <label for="audit-to">To (UTC)</label>
        <input
          id="audit-to"
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
        <button type="button" onClick={() => navigate('audit')}>
          Clear
        </button>
      </div>
    </form>
  );
}
