import { useState } from 'preact/hooks';
import {
  ADMIN_PERMISSIONS,
  type ApiKey,
  type CreatedApiKey,
  DEFAULT_PERMISSIONS,
  KEY_STATUSES,
  OPERATORS,
  PERMISSIONS,
  type Permission,
} from '../../../client/index.js';
import { oneOf, unwrap } from '../api.js';
import {
  Badge,
  ChoiceSelect,
  Dialog,
  ErrorMessage,
  FormDialog,
  PagedResults,
  TableRegion,
  TenantSelect,
} from '../components.js';
import { useConsole } from '../context.js';
import { InputError } from '../errors.js';
import { formatTime } from '../format.js';
import { useAction, usePaged } from '../hooks.js';
import {
  RateLimitsDialog,
  RateLimitsFields,
  rateLimitsText,
  useRateLimitsInput,
} from '../rate-limits.js';
import { navigate, type Params } from '../router.js';

/** GET /v1/admin/api-keys; create (the secret shown once) and revoke. */
export function ApiKeys({ params }: { readonly params: Params }) {
  const { client, notify } = useConsole();
  const { tenant, status } = params;
  const list = usePaged<ApiKey>(
    async (cursor) => {
      const page = await unwrap(
        client.GET('/v1/admin/api-keys', {
          params: {
            query: { tenant_id: tenant, status: oneOf(KEY_STATUSES, status), cursor, limit: 50 },
          },
        }),
      );
      return { items: page.keys, cursor: page.next_cursor };
    },
    [client, tenant, status],
  );
  const [created, setCreated] = useState<CreatedApiKey>();
  const [revoking, setRevoking] = useState<ApiKey>();
  const [limiting, setLimiting] = useState<ApiKey>();

  return (
    <>
      <CreateKey
        key={tenant ?? ''}
        tenant={tenant}
        onCreated={(k) => {
          setCreated(k);
          list.reload();
        }}
      />
      <section aria-labelledby="key-list">
        <h2 id="key-list">Keys</h2>
        <div class="filters">
          <TenantSelect
            id="key-filter-tenant"
            value={tenant}
            anyLabel="All tenants"
            onChange={(t) => navigate('keys', { tenant: t, status })}
          />
          <ChoiceSelect
            id="key-status"
            label="Status"
            value={status}
            options={KEY_STATUSES}
            onChange={(s) => navigate('keys', { tenant, status: s })}
          />
        </div>
        <PagedResults list={list} what="keys" empty={<p>No keys match.</p>}>
          <TableRegion label="API keys">
            <table>
              <thead>
                <tr>
                  <th scope="col">Key</th>
                  <th scope="col">Tenant</th>
                  <th scope="col">Permissions</th>
                  <th scope="col">Status</th>
                  <th scope="col">Created</th>
                  <th scope="col">
                    <span class="visually-hidden">Revoke</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.items.map((k) => (
                  <tr key={k.key_id}>
                    <th scope="row">
                      {k.name}
                      <br />
                      <span class="mono muted">
                        {k.key_id} · {k.key_prefix}…
                      </span>
                    </th>
                    <td class="mono">{k.tenant_id}</td>
                    <td>
                      <Permissions granted={k.permissions} />
                      {k.rate_limits && (
                        <>
                          <br />
                          <span class="muted">Rate limits: {rateLimitsText(k.rate_limits)}</span>
                        </>
                      )}
                    </td>
                    <td>
                      <Badge value={k.status} />
                      {k.revoked_at && (
                        <>
                          <br />
                          <span class="muted">
                            {formatTime(k.revoked_at)}
                            {k.revoked_reason && `: ${k.revoked_reason}`}
                          </span>
                        </>
                      )}
                    </td>
                    <td>{formatTime(k.created_at)}</td>
                    <td>
                      {k.status === 'ACTIVE' && k.tenant_id !== OPERATORS && (
                        <button type="button" onClick={() => setLimiting(k)}>
                          Limits…
                          <span class="visually-hidden">
                            {' '}
                            of {k.name} ({k.key_id})
                          </span>
                        </button>
                      )}{' '}
                      {k.status === 'ACTIVE' && (
                        <button type="button" class="danger" onClick={() => setRevoking(k)}>
                          Revoke…
                          <span class="visually-hidden">
                            {' '}
                            {k.name} ({k.key_id})
                          </span>
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
      {created && <SecretDialog created={created} onClose={() => setCreated(undefined)} />}
      {limiting && (
        <RateLimitsDialog
          title={`Rate limits of key ${limiting.name}`}
          current={limiting.rate_limits}
          note={`The key counts against these and against tenant ${limiting.tenant_id}'s: it can only narrow them.`}
          onClose={() => setLimiting(undefined)}
          save={async (rate_limits) => {
            await unwrap(
              client.PATCH('/v1/admin/api-keys/{key_id}', {
                params: { path: { key_id: limiting.key_id } },
                body: { rate_limits },
              }),
            );
            notify(
              `Key ${limiting.name} (${limiting.key_id}): rate limits ${rateLimitsText(rate_limits ?? undefined)}.`,
            );
            setLimiting(undefined);
            list.reload();
          }}
        />
      )}
      {revoking && (
        <RevokeDialog
          apiKey={revoking}
          onClose={() => setRevoking(undefined)}
          onDone={() => {
            notify(`Key ${revoking.name} (${revoking.key_id}) revoked.`);
            setRevoking(undefined);
            list.reload();
          }}
        />
      )}
    </>
  );
}

function Permissions({ granted }: { readonly granted: readonly Permission[] }) {
  if (PERMISSIONS.every((p) => granted.includes(p))) return <span>all ({granted.length})</span>;
  return <span class="permissions">{granted.join(', ') || 'none'}</span>;
}

function CreateKey({
  tenant,
  onCreated,
}: {
  readonly tenant: string | undefined;
  readonly onCreated: (k: CreatedApiKey) => void;
}) {
  const { client } = useConsole();
  const [forTenant, setForTenant] = useState(tenant);
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  // An operator credential (owner OPERATORS): admin-plane permissions, audited under its name,
  // signs the console and the CLI in like the admin key (docs/decisions.md § Operators).
  const [operator, setOperator] = useState(false);
  const choices: readonly Permission[] = operator
    ? ADMIN_PERMISSIONS
    : PERMISSIONS.filter((p) => !p.startsWith('admin:'));
  const [permissions, setPermissions] = useState<readonly Permission[]>(DEFAULT_PERMISSIONS);
  const limits = useRateLimitsInput();
  const create = useAction(async () => {
    const owner = operator ? OPERATORS : forTenant;
    if (!owner) throw new InputError('choose the tenant the key belongs to.', 'Tenant');
    if (permissions.length === 0)
      throw new InputError('grant at least one permission.', 'Permissions');
    const rateLimits = operator ? undefined : limits.limits();
    const k = await unwrap(
      client.POST('/v1/admin/api-keys', {
        body: {
          tenant_id: owner,
          name: name.trim(),
          ...(description.trim() && { description: description.trim() }),
          permissions: [...permissions],
          ...(rateLimits && { rate_limits: rateLimits }),
        },
      }),
    );
    setName('');
    setDescription('');
    limits.reset();
    onCreated(k);
  });
  const toggle = (p: Permission, on: boolean) =>
    setPermissions((now) =>
      on ? choices.filter((x) => x === p || now.includes(x)) : now.filter((x) => x !== p),
    );
  return (
    <details class="panel">
      <summary>New API key</summary>
      <form
        class="stacked-form"
        onSubmit={(e) => {
          e.preventDefault();
          void create.run();
        }}
      >
        <div class="field">
          <label>
            <input
              type="checkbox"
              checked={operator}
              onChange={(e) => {
                const on = e.currentTarget.checked;
                setOperator(on);
                setPermissions(on ? ['admin:read'] : DEFAULT_PERMISSIONS);
              }}
            />{' '}
            An operator's credential (admin plane, audited under its name)
          </label>
        </div>
        {!operator && (
          <TenantSelect
            id="new-key-tenant"
            value={forTenant}
            onChange={setForTenant}
            includeClosed={false}
          />
        )}
        <div class="field">
          <label for="new-key-name">Name</label>
          <input
            id="new-key-name"
            required
            maxLength={256}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for="new-key-description">Description (optional)</label>
          <input
            id="new-key-description"
            maxLength={1024}
            value={description}
            onInput={(e) => setDescription(e.currentTarget.value)}
          />
        </div>
        <fieldset>
          <legend>Permissions</legend>
          <ul class="checkboxes">
            {choices.map((p) => (
              <li key={p}>
                <label>
                  <input
                    type="checkbox"
                    checked={permissions.includes(p)}
                    onChange={(e) => toggle(p, e.currentTarget.checked)}
                  />{' '}
                  <span class="mono">{p}</span>
                </label>
              </li>
            ))}
          </ul>
        </fieldset>
        {!operator && (
          <RateLimitsFields idPrefix="new-key" typed={limits.typed} onInput={limits.setTyped} />
        )}
        <ErrorMessage error={create.error} />
        <button type="submit" class="primary" disabled={create.busy}>
          Create key
        </button>
      </form>
    </details>
  );
}

/** The secret, once: it is not stored anywhere the console or the service can show it again. */
function SecretDialog({
  created,
  onClose,
}: {
  readonly created: CreatedApiKey;
  readonly onClose: () => void;
}) {
  const [copied, setCopied] = useState(false);
  return (
    <Dialog title={`Key ${created.name} created`} onClose={onClose}>
      <p>
        <strong>Copy the secret now: it is shown this once.</strong> The service keeps only its
        hash; a lost secret means a new key.
      </p>
      <div class="field">
        <label for="new-key-secret">Secret of {created.key_id}</label>
        <input
          id="new-key-secret"
          class="mono secret"
          readOnly
          value={created.key_secret}
          onFocus={(e) => e.currentTarget.select()}
        />
      </div>
      <p class="live-inline" role="status">
        {copied ? 'Copied to the clipboard.' : ''}
      </p>
      <div class="dialog-actions">
        <button
          type="button"
          onClick={() =>
            navigator.clipboard.writeText(created.key_secret).then(
              () => setCopied(true),
              () => setCopied(false),
            )
          }
        >
          Copy secret
        </button>
        <button type="button" class="primary" onClick={onClose}>
          I have stored it
        </button>
      </div>
    </Dialog>
  );
}

function RevokeDialog({
  apiKey: k,
  onClose,
  onDone,
}: {
  readonly apiKey: ApiKey;
  readonly onClose: () => void;
  readonly onDone: () => void;
}) {
  const { client } = useConsole();
  const [reason, setReason] = useState('');
  const revoke = useAction(async () => {
    await unwrap(
      client.DELETE('/v1/admin/api-keys/{key_id}', {
        params: { path: { key_id: k.key_id }, query: { reason: reason.trim() || undefined } },
      }),
    );
    onDone();
  });
  return (
    <FormDialog
      title={`Revoke key ${k.name}?`}
      onClose={onClose}
      action={revoke}
      submit="Revoke key"
      submitClass="danger"
    >
      <p>
        Every request with {k.key_prefix}… ({k.key_id}, tenant {k.tenant_id}) is refused with 401
        within 5 seconds. Revocation is permanent.
      </p>
      <div class="field">
        <label for="revoke-reason">
          Reason (optional, kept with the key and in the audit trail)
        </label>
        <input
          id="revoke-reason"
          maxLength={512}
          value={reason}
          onInput={(e) => setReason(e.currentTarget.value)}
        />
      </div>
    </FormDialog>
  );
}
