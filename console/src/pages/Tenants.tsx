import { useState } from 'preact/hooks';
import { TENANT_STATUSES, type Tenant, type TenantStatus } from '../../../client/index.js';
import { oneOf, unwrap } from '../api.js';
import {
  Badge,
  ChoiceSelect,
  ErrorMessage,
  FormDialog,
  PagedResults,
  TableRegion,
} from '../components.js';
import { useConsole } from '../context.js';
import { formatTime } from '../format.js';
import { useAction, usePaged } from '../hooks.js';
import { RateLimitsDialog, rateLimitsText } from '../rate-limits.js';
import { hrefOf, navigate, type Params } from '../router.js';
import { BulkTenants } from './Bulk.js';

type Change = { readonly tenant: Tenant; readonly to: TenantStatus };

/** GET /v1/admin/tenants; create, suspend, resume and close (PATCH /v1/admin/tenants/{id}), and in bulk. */
export function Tenants({ params }: { readonly params: Params }) {
  const { client, tenants: all, notify } = useConsole();
  const status = params.status;
  const list = usePaged<Tenant>(
    async (cursor) => {
      const page = await unwrap(
        client.GET('/v1/admin/tenants', {
          params: { query: { status: oneOf(TENANT_STATUSES, status), cursor, limit: 50 } },
        }),
      );
      return { items: page.tenants, cursor: page.next_cursor };
    },
    [client, status],
  );
  const [change, setChange] = useState<Change>();
  const [limiting, setLimiting] = useState<Tenant>();
  const changed = () => {
    list.reload();
    all.reload();
  };

  return (
    <>
      <CreateTenant
        onCreated={(t) => {
          notify(`Tenant ${t.tenant_id} created.`);
          changed();
        }}
      />
      <BulkTenants onDone={changed} />
      <section aria-labelledby="tenant-list">
        <h2 id="tenant-list">All tenants</h2>
        <div class="filters">
          <ChoiceSelect
            id="tenant-status"
            label="Status"
            value={status}
            options={TENANT_STATUSES}
            onChange={(s) => navigate('tenants', { status: s })}
          />
        </div>
        <PagedResults
          list={list}
          what="tenants"
          empty={<p>No tenants{status ? ` with status ${status}` : ''} yet.</p>}
        >
          <TableRegion label="Tenants">
            <table>
              <thead>
                <tr>
                  <th scope="col">Tenant</th>
                  <th scope="col">Status</th>
                  <th scope="col">Created</th>
                  <th scope="col">Unbudgeted scopes</th>
                  <th scope="col">Rate limits</th>
                  <th scope="col">Views</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {list.items.map((t) => (
                  <tr key={t.tenant_id}>
                    <th scope="row">
                      <span class="mono">{t.tenant_id}</span>
                      <br />
                      <span class="muted">{t.name}</span>
                    </th>
                    <td>
                      <Badge value={t.status} />
                    </td>
                    <td>{formatTime(t.created_at)}</td>
                    <td>
                      <UnbudgetedScopes tenant={t} onChanged={changed} />
                    </td>
                    <td>
                      <span>{rateLimitsText(t.rate_limits)}</span>{' '}
                      {t.status !== 'CLOSED' && (
                        <button type="button" onClick={() => setLimiting(t)}>
                          Limits…<span class="visually-hidden"> of {t.tenant_id}</span>
                        </button>
                      )}
                    </td>
                    <td class="links">
                      <a href={hrefOf('budgets', { tenant: t.tenant_id })}>Budgets</a>{' '}
                      <a href={hrefOf('reservations', { tenant: t.tenant_id })}>Reservations</a>{' '}
                      <a href={hrefOf('keys', { tenant: t.tenant_id })}>Keys</a>{' '}
                      <a href={hrefOf('audit', { tenant_id: t.tenant_id })}>Audit</a>
                    </td>
                    <td class="actions">
                      {t.status === 'ACTIVE' && (
                        <button
                          type="button"
                          onClick={() => setChange({ tenant: t, to: 'SUSPENDED' })}
                        >
                          Suspend<span class="visually-hidden"> {t.tenant_id}</span>
                        </button>
                      )}
                      {t.status === 'SUSPENDED' && (
                        <button
                          type="button"
                          onClick={() => setChange({ tenant: t, to: 'ACTIVE' })}
                        >
                          Resume<span class="visually-hidden"> {t.tenant_id}</span>
                        </button>
                      )}
                      {t.status !== 'CLOSED' && (
                        <button
                          type="button"
                          class="danger"
                          onClick={() => setChange({ tenant: t, to: 'CLOSED' })}
                        >
                          Close…<span class="visually-hidden"> {t.tenant_id}</span>
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableRegion>
        </PagedResults>
      </section>
      {limiting && (
        <RateLimitsDialog
          title={`Rate limits of tenant ${limiting.tenant_id}`}
          current={limiting.rate_limits}
          note="Every key of the tenant counts against these; a key's own limits can only narrow them."
          onClose={() => setLimiting(undefined)}
          save={async (rate_limits) => {
            await unwrap(
              client.PATCH('/v1/admin/tenants/{tenant_id}', {
                params: { path: { tenant_id: limiting.tenant_id } },
                body: { rate_limits },
              }),
            );
            notify(
              `Tenant ${limiting.tenant_id}: rate limits ${rateLimitsText(rate_limits ?? undefined)}.`,
            );
            setLimiting(undefined);
            changed();
          }}
        />
      )}
      {change && (
        <StatusDialog
          change={change}
          onClose={() => setChange(undefined)}
          onDone={() => {
            notify(`Tenant ${change.tenant.tenant_id} is now ${change.to}.`);
            setChange(undefined);
            changed();
          }}
        />
      )}
    </>
  );
}

/**
 * How the tenant's scopes without a budget count: SPEC's zero allocation (refused), or skipped
 * as the reference runtime does (README § Unbudgeted scopes). PATCH tenant, audited.
 */
function UnbudgetedScopes({
  tenant,
  onChanged,
}: {
  readonly tenant: Tenant;
  readonly onChanged: () => void;
}) {
  const { client, notify } = useConsole();
  const skipping = tenant.unbudgeted_scopes === 'SKIP';
  const change = useAction(async () => {
    const to = skipping ? 'ZERO_ALLOCATION' : 'SKIP';
    await unwrap(
      client.PATCH('/v1/admin/tenants/{tenant_id}', {
        params: { path: { tenant_id: tenant.tenant_id } },
        body: { unbudgeted_scopes: to },
      }),
    );
    notify(
      `Tenant ${tenant.tenant_id}: scopes without a budget are now ${skipping ? 'refused' : 'skipped'}.`,
    );
    onChanged();
  });
  if (tenant.status === 'CLOSED')
    return <span class="muted">{skipping ? 'skipped' : 'refused'}</span>;
  return (
    <>
      <span>{skipping ? 'skipped' : 'refused'}</span>{' '}
      <button type="button" disabled={change.busy} onClick={() => void change.run()}>
        {skipping ? 'Refuse' : 'Skip'}
        <span class="visually-hidden"> unbudgeted scopes of {tenant.tenant_id}</span>
      </button>
      <ErrorMessage error={change.error} />
    </>
  );
}

function CreateTenant({ onCreated }: { readonly onCreated: (t: Tenant) => void }) {
  const { client } = useConsole();
  const [id, setId] = useState('');
  const [name, setName] = useState('');
  const create = useAction(async () => {
    const t = await unwrap(
      client.POST('/v1/admin/tenants', { body: { tenant_id: id.trim(), name: name.trim() } }),
    );
    setId('');
    setName('');
    onCreated(t);
  });
  return (
    <section aria-labelledby="new-tenant">
      <h2 id="new-tenant">New tenant</h2>
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          void create.run();
        }}
      >
        <div class="field">
          <label for="new-tenant-id">Tenant id</label>
          <input
            id="new-tenant-id"
            required
            maxLength={64}
            pattern="[A-Za-z0-9][A-Za-z0-9_.\-]*"
            aria-describedby="new-tenant-id-help"
            value={id}
            onInput={(e) => setId(e.currentTarget.value)}
          />
          <small id="new-tenant-id-help">Letters, digits, '_', '.', '-'; permanent.</small>
        </div>
        <div class="field">
          <label for="new-tenant-name">Name</label>
          <input
            id="new-tenant-name"
            required
            maxLength={256}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </div>
        <button type="submit" class="primary" disabled={create.busy}>
          Create tenant
        </button>
      </form>
      <ErrorMessage error={create.error} />
    </section>
  );
}

const CONSEQUENCES: Readonly<Record<TenantStatus, string>> = {
  SUSPENDED:
    'New reservations, decides and events of this tenant will be refused (403) within 5 seconds. Open reservations can still be committed, released and expire. You can resume it later.',
  ACTIVE: 'The tenant may reserve again within 5 seconds.',
  CLOSED:
    'Closing is permanent: every API key of the tenant is revoked, every open reservation released and every budget closed (still readable). It cannot be undone.',
};

function StatusDialog({
  change,
  onClose,
  onDone,
}: {
  readonly change: Change;
  readonly onClose: () => void;
  readonly onDone: () => void;
}) {
  const { client } = useConsole();
  const [typed, setTyped] = useState('');
  const { tenant, to } = change;
  const closing = to === 'CLOSED';
  const apply = useAction(async () => {
    await unwrap(
      client.PATCH('/v1/admin/tenants/{tenant_id}', {
        params: { path: { tenant_id: tenant.tenant_id } },
        body: { status: to },
      }),
    );
    onDone();
  });
  const verb = closing ? 'Close' : to === 'SUSPENDED' ? 'Suspend' : 'Resume';
  return (
    <FormDialog
      title={`${verb} tenant ${tenant.tenant_id}?`}
      onClose={onClose}
      action={apply}
      formClass={undefined}
      submit={`${verb} tenant`}
      submitClass={closing || to === 'SUSPENDED' ? 'danger' : 'primary'}
      disabled={closing && typed !== tenant.tenant_id}
    >
      <p>{CONSEQUENCES[to]}</p>
      {closing && (
        <div class="field">
          <label for="confirm-close">Type the tenant id to confirm</label>
          <input
            id="confirm-close"
            autoComplete="off"
            value={typed}
            onInput={(e) => setTyped(e.currentTarget.value)}
          />
        </div>
      )}
    </FormDialog>
  );
}
