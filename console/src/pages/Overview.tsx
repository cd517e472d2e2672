import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { Budget, Tenant } from '../../../client/index.js';
import type { Client } from '../api.js';
import { unwrap } from '../api.js';
import { ErrorMessage, HealthBadge, Loading, TableRegion, UtilizationBar } from '../components.js';
import { useConsole } from '../context.js';
import { describeError } from '../errors.js';
import { formatTime, formatWire } from '../format.js';
import { type BudgetHealth, budgetHealth, NEAR_SHARE } from '../health.js';
import { useLoad } from '../hooks.js';
import { hrefOf } from '../router.js';

/**
 * The overview reads the same public API as the other pages, tenant by tenant: budgets are
 * indexed per tenant, and so are reservations. It looks at the first MAX_TENANTS tenants that
 * are not closed and says so when there are more; requests go a few at a time so the admin
 * API's throttle (20 rps in AWS) is not the limit.
 */
const MAX_TENANTS = 25;
const CONCURRENCY = 3;

async function mapLimited<T, R>(items: readonly T[], task: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await task(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, items.length) }, worker));
  return results;
}

// ---- the activity feed ----------------------------------------------------------------------

/**
 * One thing that happened, from any source. The feed merges every source newest first. Events
 * (thresholds crossed, budgets exhausted, debt, refused reservations) have a page of their own
 * (Events.tsx); GET /v1/admin/events would be one more source here.
 */
export interface FeedItem {
  readonly at: number;
  readonly kind: FeedKind;
  readonly tenant: string;
  readonly title: string;
  readonly detail: string;
  readonly href: string;
}
type FeedKind = 'expiry' | 'change';

interface FeedSource {
  readonly kind: FeedKind;
  readonly label: string;
  readonly load: (client: Client, tenants: readonly Tenant[]) => Promise<FeedItem[]>;
}

const FEED_SOURCES: readonly FeedSource[] = [
  {
    kind: 'expiry',
    label: 'Expiries',
    // Reservations that expired unsettled: GET /v1/reservations?tenant=&status=EXPIRED per tenant.
    load: async (client, tenants) =>
      (
        await mapLimited(tenants, async (t) => {
          const page = await unwrap(
            client.GET('/v1/reservations', {
              params: { query: { tenant: t.tenant_id, status: 'EXPIRED', limit: 5 } },
            }),
          );
          return page.reservations.map(
            (r): FeedItem => ({
              at: r.finalized_at_ms ?? r.expires_at_ms,
              kind: 'expiry',
              tenant: t.tenant_id,
              title: `Reservation expired unsettled: ${formatWire(r.reserved)} held`,
              detail: `${r.scope_path} · ${r.action.kind} ${r.action.name} · ${r.reservation_id}`,
              href: hrefOf('reservations', { tenant: t.tenant_id, status: 'EXPIRED' }),
            }),
          );
        })
      ).flat(),
  },
  {
    kind: 'change',
    label: 'Operator changes',
    // Every admin change and forced release: the audit trail, across tenants.
    load: async (client) => {
      const page = await unwrap(
        client.GET('/v1/admin/audit/logs', { params: { query: { limit: 15 } } }),
      );
      return page.logs.map(
        (e): FeedItem => ({
          at: Date.parse(e.timestamp),
          kind: 'change',
          tenant: e.tenant_id,
          title: `${e.operation} by ${e.metadata.actor}`,
          detail: `${e.resource_type} ${e.resource_id}`,
          href: hrefOf('audit', { tenant_id: e.tenant_id, resource_id: e.resource_id }),
        }),
      );
    },
  },
];

// ---- the snapshot ---------------------------------------------------------------------------

interface Flagged {
  readonly budget: Budget;
  readonly health: BudgetHealth;
}

interface Snapshot {
  readonly counts: Readonly<Record<Tenant['status'], number>>;
  readonly looked: number;
  readonly open: number;
  readonly flagged: readonly Flagged[];
  readonly budgets: number;
  readonly inDebt: readonly Budget[];
  readonly feed: readonly FeedItem[];
  readonly feedErrors: readonly string[];
}

async function loadSnapshot(client: Client, tenants: readonly Tenant[]): Promise<Snapshot> {
  const counts = { ACTIVE: 0, SUSPENDED: 0, CLOSED: 0 };
  for (const t of tenants) counts[t.status]++;
  const open = tenants.filter((t) => t.status !== 'CLOSED');
  const looked = open.slice(0, MAX_TENANTS);
  const [budgetPages, feeds] = await Promise.all([
    mapLimited(looked, (t) =>
      unwrap(
        client.GET('/v1/admin/budgets', {
          params: { query: { tenant_id: t.tenant_id, limit: 100 } },
        }),
      ),
    ),
    Promise.all(
      FEED_SOURCES.map((s) =>
        s.load(client, looked).then(
          (items) => ({ items, error: undefined }),
          (e: unknown) => {
            const d = describeError(e instanceof Error ? e : new Error(String(e)));
            return { items: [], error: `${s.label}: ${d.title} ${d.message}` };
          },
        ),
      ),
    ),
  ]);
  const budgets = budgetPages.flatMap((p) => p.ledgers).filter((b) => b.status !== 'CLOSED');
  const flagged = budgets
    .map((budget) => ({ budget, health: budgetHealth(budget) }))
    .filter((f) => f.health.state !== 'ok')
    .sort((a, b) =>
      a.health.state === b.health.state
        ? b.health.used - a.health.used
        : a.health.state === 'over'
          ? -1
          : 1,
    );
  return {
    counts,
    looked: looked.length,
    open: open.length,
    flagged,
    budgets: budgets.length,
    inDebt: budgets.filter((b) => b.debt.amount > 0),
    feed: feeds
      .flatMap((f) => f.items)
      .sort((a, b) => b.at - a.at)
      .slice(0, 20),
    feedErrors: feeds.flatMap((f) => (f.error ? [f.error] : [])),
  };
}

// ---- the page -------------------------------------------------------------------------------

/** GET /v1/admin/overview: the service's own counters, across every tenant, at a fixed cost. */
function Fleet() {
  const { client } = useConsole();
  const fleet = useLoad(() => unwrap(client.GET('/v1/admin/overview')), [client]);
  const o = fleet.data;
  if (fleet.error) return <ErrorMessage error={fleet.error} />;
  if (!o) return <Loading what="the service's counters" />;
  const refusals = Object.entries(o.recent_denials_by_reason ?? {});
  return (
    <section aria-labelledby="fleet">
      <h2 id="fleet">Across every tenant</h2>
      <ul class="tiles" aria-label="Counters">
        <Tile figure={o.tenant_counts.total} label="Tenants" href={hrefOf('tenants')}>
          {o.tenant_counts.active} active · {o.tenant_counts.suspended} suspended ·{' '}
          {o.tenant_counts.closed} closed
        </Tile>
        <Tile figure={o.budget_counts.total} label="Budgets">
          {o.budget_counts.active} active · {o.budget_counts.frozen} frozen ·{' '}
          {o.budget_counts.closed} closed
        </Tile>
        <Tile figure={o.budget_counts.over_limit} label="Over their limit" tone="over" />
        <Tile figure={o.budget_counts.with_debt} label="With debt" tone="over" />
        <Tile
          figure={refusals.reduce((n, [, c]) => n + c, 0)}
          label={`Refusals, last ${Math.round(o.event_window_seconds / 60)} min`}
        >
          {refusals.map(([reason, c]) => `${reason} ${c}`).join(' · ') || 'none'}
        </Tile>
      </ul>
    </section>
  );
}

export function Overview() {
  const { client, tenants } = useConsole();
  const snapshot = useLoad(
    async () => (tenants.list ? loadSnapshot(client, tenants.list) : undefined),
    [client, tenants.list],
  );
  const s = snapshot.data;
  return (
    <>
      <div class="section-head">
        <p class="muted">
          Budgets are flagged near their threshold from {NEAR_SHARE * 100} % of the allocation spent
          or reserved, or once their caps apply; over it from 100 %, or in debt.
        </p>
        <button type="button" onClick={snapshot.reload} disabled={snapshot.loading}>
          Refresh
        </button>
      </div>
      <Fleet />
      <ErrorMessage error={snapshot.error} />
      {!s ? (
        <Loading what="the overview" />
      ) : (
        <>
          {s.open > s.looked && (
            <p class="notice">
              The overview looks at the first {s.looked} of {s.open} open tenants; see each tenant's
              budgets for the others.
            </p>
          )}
          <ul class="tiles" aria-label="Summary">
            <Tile figure={s.counts.ACTIVE} label="Active tenants" href={hrefOf('tenants')}>
              {s.counts.SUSPENDED} suspended · {s.counts.CLOSED} closed
            </Tile>
            <Tile figure={count(s.flagged, 'over')} label="Over threshold" tone="over">
              of {s.budgets} open budgets
            </Tile>
            <Tile figure={count(s.flagged, 'near')} label="Near threshold" tone="near" />
            <Tile figure={s.inDebt.length} label="In debt" tone="over">
              {debtTotals(s.inDebt)}
            </Tile>
          </ul>
          <Attention flagged={s.flagged} />
          <Feed items={s.feed} errors={s.feedErrors} />
        </>
      )}
    </>
  );
}

const count = (flagged: readonly Flagged[], state: 'over' | 'near') =>
  flagged.filter((f) => f.health.state === state).length;

/** One figure of the summary; a non-zero figure with a tone gets a colored border too. */
function Tile({
  figure,
  label,
  href,
  tone,
  children,
}: {
  readonly figure: number;
  readonly label: string;
  readonly href?: string;
  readonly tone?: 'over' | 'near';
  readonly children?: ComponentChildren;
}) {
  const body = (
    <>
      <span class="tile-figure">{figure}</span> <span class="tile-label">{label}</span>
    </>
  );
  return (
    <li class={tone && figure > 0 ? `tile-${tone}` : undefined}>
      {href ? <a href={href}>{body}</a> : <span>{body}</span>}
      {children && <span class="muted">{children}</span>}
    </li>
  );
}

function debtTotals(budgets: readonly Budget[]): string {
  const totals = new Map<Budget['unit'], number>();
  for (const b of budgets) totals.set(b.unit, (totals.get(b.unit) ?? 0) + b.debt.amount);
  return [...totals].map(([unit, amount]) => formatWire({ unit, amount })).join(' · ');
}

function Attention({ flagged }: { readonly flagged: readonly Flagged[] }) {
  return (
    <section aria-labelledby="attention">
      <h2 id="attention">Budgets needing attention</h2>
      {flagged.length === 0 ? (
        <p>None: every budget is below its threshold.</p>
      ) : (
        <TableRegion label="Budgets needing attention">
          <table>
            <thead>
              <tr>
                <th scope="col">Budget</th>
                <th scope="col">State</th>
                <th scope="col">Utilization</th>
                <th scope="col">Debt</th>
                <th scope="col">Why</th>
              </tr>
            </thead>
            <tbody>
              {flagged.slice(0, 20).map(({ budget: b, health }) => (
                <tr key={b.ledger_id}>
                  <th scope="row">
                    <a
                      class="mono"
                      href={hrefOf('budgets', { tenant: b.tenant_id, scope_prefix: b.scope })}
                    >
                      {b.scope}
                    </a>
                    <br />
                    <span class="muted">{b.unit}</span>
                  </th>
                  <td>
                    <HealthBadge state={health.state} />
                  </td>
                  <td class="bar-cell">
                    <UtilizationBar budget={b} compact />
                  </td>
                  <td>{formatWire(b.debt)}</td>
                  <td>{health.reasons.join(' · ')}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableRegion>
      )}
    </section>
  );
}

const KIND_WORDS: Readonly<Record<FeedKind, string>> = {
  expiry: 'Expiry',
  change: 'Change',
};

function Feed({
  items,
  errors,
}: {
  readonly items: readonly FeedItem[];
  readonly errors: readonly string[];
}) {
  const [kind, setKind] = useState<FeedKind | ''>('');
  const shown = items.filter((i) => kind === '' || i.kind === kind);
  return (
    <section aria-labelledby="activity">
      <h2 id="activity">Recent expiries and changes</h2>
      <p class="muted">
        Refused reservations, thresholds crossed and exhausted budgets are events: see them on the{' '}
        <a href={hrefOf('events', { category: 'budget' })}>Events</a> page, or have them sent to a
        webhook as they happen.
      </p>
      <div class="filters">
        <div class="field">
          <label for="feed-kind">Show</label>
          <select
            id="feed-kind"
            value={kind}
            onChange={(e) => setKind(e.currentTarget.value as FeedKind | '')}
          >
            <option value="">Everything</option>
            {FEED_SOURCES.map((s) => (
              <option key={s.kind} value={s.kind}>
                {s.label}
              </option>
            ))}
          </select>
        </div>
      </div>
      {errors.map((e) => (
        <p key={e} class="error" role="alert">
          {e}
        </p>
      ))}
      {shown.length === 0 ? (
        <p>Nothing recent.</p>
      ) : (
        <ol class="feed">
          {shown.map((i) => (
            <li key={`${i.kind}-${i.at}-${i.detail}`} class={`feed-${i.kind}`}>
              <span class={`badge kind-${i.kind}`}>{KIND_WORDS[i.kind]}</span>{' '}
              <a href={i.href}>{i.title}</a>
              <span class="muted">
                {' '}
                · {i.tenant} · {formatTime(i.at)}
              </span>
              <br />
              <span class="mono muted feed-detail">{i.detail}</span>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
