import { useState } from 'preact/hooks';
import type { AdminSchemas } from '../../../client/index.js';
import { unwrap } from '../api.js';
import { Badge, ErrorMessage, PagedResults, TableRegion, TenantSelect } from '../components.js';
import { useConsole } from '../context.js';
import { formatDuration } from '../format.js';
import { useAction, usePaged } from '../hooks.js';
import { navigate, type Params } from '../router.js';

type Policy = AdminSchemas['Policy'];

/**
 * A tenant's policies (GET /v1/admin/policies?tenant_id=): caps and TTL limits by scope pattern,
 * enforced on every reserve, dry run and decide within 5 s of a change; create, disable, enable.
 */
export function Policies({ params }: { readonly params: Params }) {
  const { client, notify } = useConsole();
  const tenant = params.tenant;
  const list = usePaged<Policy>(
    async (cursor) => {
      const page = await unwrap(
        client.GET('/v1/admin/policies', {
          params: { query: { tenant_id: tenant, cursor, limit: 50 } },
        }),
      );
      return { items: page.policies, cursor: page.next_cursor };
    },
    [client, tenant],
    tenant !== undefined,
  );
  const toggle = useAction(async (p: Policy) => {
    const status = p.status === 'ACTIVE' ? 'DISABLED' : 'ACTIVE';
    await unwrap(
      client.PATCH('/v1/admin/policies/{policy_id}', {
        params: { path: { policy_id: p.policy_id } },
        body: { status },
      }),
    );
    notify(`Policy ${p.name} is now ${status}.`);
    list.reload();
  });
  return (
    <>
      <div class="filters">
        <TenantSelect value={tenant} onChange={(t) => navigate('policies', { tenant: t })} />
      </div>
      {tenant === undefined ? (
        <p>Choose a tenant to see its policies.</p>
      ) : (
        <>
          <CreatePolicy
            key={tenant}
            tenant={tenant}
            onCreated={(p) => {
              notify(`Policy ${p.name} created.`);
              list.reload();
            }}
          />
          <section aria-labelledby="policy-list">
            <h2 id="policy-list">Policies of {tenant}</h2>
            <ErrorMessage error={toggle.error} />
            <PagedResults list={list} what="policies" empty={<p>No policies yet.</p>}>
              <TableRegion label="Policies">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Policy</th>
                      <th scope="col">Scope pattern</th>
                      <th scope="col">Priority</th>
                      <th scope="col">Sets</th>
                      <th scope="col">Status</th>
                      <th scope="col">Actions</th>
                    </tr>
                  </thead>
                  <tbody>
                    {list.items.map((p) => (
                      <tr key={p.policy_id}>
                        <th scope="row">
                          {p.name}
                          <br />
                          <span class="muted mono">{p.policy_id}</span>
                        </th>
                        <td class="mono">{p.scope_pattern}</td>
                        <td>{p.priority}</td>
                        <td>{describe(p)}</td>
                        <td>
                          <Badge value={p.status} />
                        </td>
                        <td class="actions">
                          <button
                            type="button"
                            disabled={toggle.busy}
                            onClick={() => void toggle.run(p)}
                          >
                            {p.status === 'ACTIVE' ? 'Disable' : 'Enable'}
                            <span class="visually-hidden"> {p.name}</span>
                          </button>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableRegion>
            </PagedResults>
          </section>
        </>
      )}
    </>
  );
}

function describe(p: Policy): string {
  const parts: string[] = [];
  if (p.caps?.max_tokens !== undefined) parts.push(`at most ${p.caps.max_tokens} tokens`);
  if (p.caps?.tool_denylist) parts.push(`denies ${p.caps.tool_denylist.join(', ')}`);
  if (p.caps?.tool_allowlist) parts.push(`allows only ${p.caps.tool_allowlist.join(', ')}`);
  const ttl = p.reservation_ttl_override;
  if (ttl?.max_ttl_ms !== undefined) parts.push(`TTL at most ${formatDuration(ttl.max_ttl_ms)}`);
  if (ttl?.default_ttl_ms !== undefined)
    parts.push(`TTL ${formatDuration(ttl.default_ttl_ms)} by default`);
  if (ttl?.max_extensions !== undefined) parts.push(`${ttl.max_extensions} extensions`);
  if (p.commit_overage_policy) parts.push(`overage ${p.commit_overage_policy}`);
  return parts.join(' · ') || '—';
}

function CreatePolicy({
  tenant,
  onCreated,
}: {
  readonly tenant: string;
  readonly onCreated: (p: Policy) => void;
}) {
  const { client } = useConsole();
  const [name, setName] = useState('');
  const [pattern, setPattern] = useState(`tenant:${tenant}/*`);
  const [priority, setPriority] = useState('0');
  const [maxTokens, setMaxTokens] = useState('');
  const [maxTtlSeconds, setMaxTtlSeconds] = useState('');
  const create = useAction(async () => {
    const p = await unwrap(
      client.POST('/v1/admin/policies', {
        body: {
          tenant_id: tenant,
          name: name.trim(),
          scope_pattern: pattern.trim(),
          priority: Number(priority || 0),
          ...(maxTokens && { caps: { max_tokens: Number(maxTokens) } }),
          ...(maxTtlSeconds && {
            reservation_ttl_override: { max_ttl_ms: Number(maxTtlSeconds) * 1000 },
          }),
        },
      }),
    );
    setName('');
    onCreated(p);
  });
  return (
    <details class="panel">
      <summary>New policy</summary>
      <form
        class="stacked-form"
        onSubmit={(e) => {
          e.preventDefault();
          void create.run();
        }}
      >
        <div class="field">
          <label for="new-policy-name">Name</label>
          <input
            id="new-policy-name"
            required
            maxLength={256}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for="new-policy-pattern">Scope pattern</label>
          <input
            id="new-policy-pattern"
            required
            aria-describedby="new-policy-pattern-help"
            value={pattern}
            onInput={(e) => setPattern(e.currentTarget.value)}
          />
          <small id="new-policy-pattern-help">
            <span class="mono">tenant:{tenant}/*</span> everything below the tenant,{' '}
            <span class="mono">agent:*</span> every agent scope.
          </small>
        </div>
        <div class="field">
          <label for="new-policy-priority">Priority</label>
          <input
            id="new-policy-priority"
            type="number"
            min={0}
            value={priority}
            onInput={(e) => setPriority(e.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for="new-policy-tokens">Cap: at most this many tokens (optional)</label>
          <input
            id="new-policy-tokens"
            type="number"
            min={0}
            value={maxTokens}
            onInput={(e) => setMaxTokens(e.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for="new-policy-ttl">Longest reservation TTL, seconds (optional)</label>
          <input
            id="new-policy-ttl"
            type="number"
            min={1}
            max={86400}
            value={maxTtlSeconds}
            onInput={(e) => setMaxTtlSeconds(e.currentTarget.value)}
          />
        </div>
        <ErrorMessage error={create.error} />
        <button type="submit" class="primary" disabled={create.busy}>
          Create policy
        </button>
      </form>
    </details>
  );
}
