import { useState } from 'preact/hooks';
import {
  type CreatedWebhook,
  DELIVERY_STATUSES,
  EVENT_CATEGORIES,
  EVENT_TYPES,
  type EventCategory,
  type EventType,
  SUBSCRIPTION_STATUSES,
  TENANT_EVENT_CATEGORIES,
  type WebhookDelivery,
  type WebhookSubscription,
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
import { formatTime, utcInputToIso } from '../format.js';
import { useAction, usePaged } from '../hooks.js';
import { hrefOf, navigate, type Params } from '../router.js';

/** The operator's own subscriptions (every tenant's events, any category). */
const OPERATOR = '__system__';

/**
 * Webhook subscriptions (GET /v1/admin/webhooks): create (the secret shown once), pause and
 * resume, test, replay, delete; and one subscription's deliveries (`?subscription=`).
 */
export function Webhooks({ params }: { readonly params: Params }) {
  const { client, notify } = useConsole();
  const { tenant, status, subscription } = params;
  const list = usePaged<WebhookSubscription>(
    async (cursor) => {
      const page = await unwrap(
        client.GET('/v1/admin/webhooks', {
          params: {
            query: {
              tenant_id: tenant,
              status: oneOf(SUBSCRIPTION_STATUSES, status),
              cursor,
              limit: 50,
            },
          },
        }),
      );
      return { items: page.subscriptions, cursor: page.next_cursor };
    },
    [client, tenant, status],
  );
  const [created, setCreated] = useState<CreatedWebhook>();
  const [replaying, setReplaying] = useState<WebhookSubscription>();
  const [deleting, setDeleting] = useState<WebhookSubscription>();
  const path = (s: WebhookSubscription) => ({
    params: { path: { subscription_id: s.subscription_id } },
  });
  const setStatus = useAction(async (s: WebhookSubscription, to: 'ACTIVE' | 'PAUSED') => {
    await unwrap(
      client.PATCH('/v1/admin/webhooks/{subscription_id}', { ...path(s), body: { status: to } }),
    );
    notify(`Subscription ${s.subscription_id} ${to === 'PAUSED' ? 'paused' : 'resumed'}.`);
    list.reload();
  });
  const test = useAction(async (s: WebhookSubscription) => {
    const r = await unwrap(client.POST('/v1/admin/webhooks/{subscription_id}/test', path(s)));
    notify(
      r.success
        ? `Test event delivered to ${s.subscription_id}: ${r.response_status} in ${r.response_time_ms} ms.`
        : `Test event not delivered to ${s.subscription_id}: ${r.error_message ?? 'no answer'}.`,
    );
  });

  return (
    <>
      <CreateWebhook
        tenant={tenant}
        onCreated={(c) => {
          setCreated(c);
          list.reload();
        }}
      />
      <section aria-labelledby="webhook-list">
        <h2 id="webhook-list">Subscriptions</h2>
        <div class="filters">
          <TenantSelect
            id="webhook-filter-tenant"
            value={tenant}
            anyLabel="All owners"
            onChange={(t) => navigate('webhooks', { tenant: t, status })}
          />
          <ChoiceSelect
            id="webhook-status"
            label="Status"
            value={status}
            options={SUBSCRIPTION_STATUSES}
            onChange={(s) => navigate('webhooks', { tenant, status: s })}
          />
        </div>
        <ErrorMessage error={setStatus.error ?? test.error} />
        <PagedResults list={list} what="subscriptions" empty={<p>No subscriptions match.</p>}>
          <TableRegion label="Webhook subscriptions">
            <table>
              <thead>
                <tr>
                  <th scope="col">Subscription</th>
                  <th scope="col">Owner</th>
                  <th scope="col">Receives</th>
                  <th scope="col">Status</th>
                  <th scope="col">Delivery</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.items.map((s) => (
                  <tr key={s.subscription_id}>
                    <th scope="row">
                      {s.name ?? s.subscription_id}
                      <br />
                      <span class="mono muted">{s.url}</span>
                    </th>
                    <td class="mono">{s.tenant_id}</td>
                    <td class="mono">
                      {[...s.event_types, ...(s.event_categories ?? []).map((c) => `${c}.*`)].join(
                        ', ',
                      )}
                    </td>
                    <td>
                      <Badge value={s.status} />
                    </td>
                    <td>
                      {s.consecutive_failures > 0
                        ? `${s.consecutive_failures} failed in a row (of ${s.disable_after_failures})`
                        : 'no failures'}
                      {s.last_success_at && (
                        <>
                          <br />
                          <span class="muted">last success {formatTime(s.last_success_at)}</span>
                        </>
                      )}
                    </td>
                    <td class="actions">
                      <a
                        href={hrefOf('webhooks', {
                          tenant,
                          status,
                          subscription: s.subscription_id,
                        })}
                      >
                        Deliveries<span class="visually-hidden"> of {s.subscription_id}</span>
                      </a>{' '}
                      {s.status === 'ACTIVE' ? (
                        <button
                          type="button"
                          disabled={setStatus.busy}
                          onClick={() => void setStatus.run(s, 'PAUSED')}
                        >
                          Pause<span class="visually-hidden"> {s.subscription_id}</span>
                        </button>
                      ) : (
                        <button
                          type="button"
                          disabled={setStatus.busy}
                          onClick={() => void setStatus.run(s, 'ACTIVE')}
                        >
                          {s.status === 'DISABLED' ? 'Re-enable' : 'Resume'}
                          <span class="visually-hidden"> {s.subscription_id}</span>
                        </button>
                      )}{' '}
                      <button type="button" disabled={test.busy} onClick={() => void test.run(s)}>
                        Test<span class="visually-hidden"> {s.subscription_id}</span>
                      </button>{' '}
                      <button type="button" onClick={() => setReplaying(s)}>
                        Replay…<span class="visually-hidden"> {s.subscription_id}</span>
                      </button>{' '}
                      <button type="button" class="danger" onClick={() => setDeleting(s)}>
                        Delete…<span class="visually-hidden"> {s.subscription_id}</span>
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableRegion>
        </PagedResults>
      </section>
      {subscription && (
        <Deliveries key={subscription} subscriptionId={subscription} params={params} />
      )}
      {created && <SecretDialog created={created} onClose={() => setCreated(undefined)} />}
      {replaying && (
        <ReplayDialog
          subscription={replaying}
          onClose={() => setReplaying(undefined)}
          onDone={(queued) => {
            notify(`Replay to ${replaying.subscription_id}: ${queued} events queued.`);
            setReplaying(undefined);
          }}
        />
      )}
      {deleting && (
        <FormDialogDelete
          subscription={deleting}
          onClose={() => setDeleting(undefined)}
          onDone={() => {
            notify(`Subscription ${deleting.subscription_id} deleted.`);
            setDeleting(undefined);
            list.reload();
          }}
        />
      )}
    </>
  );
}

/** One subscription's deliveries, newest first: each attempt's outcome and the last answer. */
function Deliveries({
  subscriptionId,
  params,
}: {
  readonly subscriptionId: string;
  readonly params: Params;
}) {
  const { client } = useConsole();
  const status = oneOf(DELIVERY_STATUSES, params.delivery_status);
  const list = usePaged<WebhookDelivery>(
    async (cursor) => {
      const page = await unwrap(
        client.GET('/v1/admin/webhooks/{subscription_id}/deliveries', {
          params: {
            path: { subscription_id: subscriptionId },
            query: { status, cursor, limit: 50 },
          },
        }),
      );
      return { items: page.deliveries, cursor: page.next_cursor };
    },
    [client, subscriptionId, status],
  );
  return (
    <section aria-labelledby="delivery-list">
      <div class="section-head">
        <h2 id="delivery-list">
          Deliveries of <span class="mono">{subscriptionId}</span>
        </h2>
        <button type="button" onClick={list.reload} disabled={list.loading}>
          Refresh
        </button>
      </div>
      <div class="filters">
        <ChoiceSelect
          id="delivery-status"
          label="Outcome"
          value={status}
          options={DELIVERY_STATUSES}
          onChange={(s) => navigate('webhooks', { ...params, delivery_status: s || undefined })}
        />
      </div>
      <PagedResults list={list} what="deliveries" empty={<p>No deliveries yet.</p>}>
        <TableRegion label="Deliveries">
          <table>
            <thead>
              <tr>
                <th scope="col">Last attempt</th>
                <th scope="col">Outcome</th>
                <th scope="col">Attempts</th>
                <th scope="col">Answer</th>
                <th scope="col">Event</th>
                <th scope="col">Error</th>
              </tr>
            </thead>
            <tbody>
              {list.items.map((d) => (
                <tr key={d.delivery_id}>
                  <td>{formatTime(d.attempted_at)}</td>
                  <td>
                    <Badge value={d.status} />
                    {d.next_retry_at && (
                      <>
                        <br />
                        <span class="muted">retry {formatTime(d.next_retry_at)}</span>
                      </>
                    )}
                  </td>
                  <td>{d.attempts}</td>
                  <td>
                    {d.response_status ?? '—'}
                    {d.response_time_ms !== undefined && (
                      <span class="muted"> in {d.response_time_ms} ms</span>
                    )}
                  </td>
                  <th scope="row" class="mono">
                    {d.event_type}
                    <br />
                    <span class="muted">{d.event_id}</span>
                  </th>
                  <td>{d.error_message ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableRegion>
      </PagedResults>
    </section>
  );
}

function CreateWebhook({
  tenant,
  onCreated,
}: {
  readonly tenant: string | undefined;
  readonly onCreated: (c: CreatedWebhook) => void;
}) {
  const { client } = useConsole();
  const [owner, setOwner] = useState<string | undefined>(tenant === OPERATOR ? undefined : tenant);
  const [url, setUrl] = useState('');
  const [name, setName] = useState('');
  const [categories, setCategories] = useState<readonly EventCategory[]>([]);
  const [types, setTypes] = useState<readonly EventType[]>([]);
  // A tenant's subscription may only select its tenant's kinds of events (the reference's rule).
  const allowedCategories = owner ? TENANT_EVENT_CATEGORIES : EVENT_CATEGORIES;
  const allowedTypes = EVENT_TYPES.filter((t) =>
    allowedCategories.includes(t.split('.')[0] as EventCategory),
  );
  const create = useAction(async () => {
    const chosenTypes = types.filter((t) => allowedTypes.includes(t));
    const chosenCategories = categories.filter((c) => allowedCategories.includes(c));
    if (chosenTypes.length === 0)
      throw new InputError('choose at least one event type.', 'Event types');
    const c = await unwrap(
      client.POST('/v1/admin/webhooks', {
        params: { query: { tenant_id: owner } },
        body: {
          url: url.trim(),
          ...(name.trim() && { name: name.trim() }),
          event_types: chosenTypes,
          ...(chosenCategories.length > 0 && { event_categories: chosenCategories }),
        },
      }),
    );
    setUrl('');
    setName('');
    onCreated(c);
  });
  return (
    <details class="panel">
      <summary>New webhook subscription</summary>
      <form
        class="stacked-form"
        onSubmit={(e) => {
          e.preventDefault();
          void create.run();
        }}
      >
        <TenantSelect
          id="new-webhook-owner"
          label="Owner"
          anyLabel="The operator (every tenant's events)"
          value={owner}
          onChange={setOwner}
          includeClosed={false}
        />
        <div class="field">
          <label for="new-webhook-url">URL</label>
          <input
            id="new-webhook-url"
            type="url"
            required
            maxLength={2048}
            value={url}
            onInput={(e) => setUrl(e.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for="new-webhook-name">Name (optional)</label>
          <input
            id="new-webhook-name"
            maxLength={256}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for="new-webhook-types">Event types</label>
          <select
            id="new-webhook-types"
            multiple
            size={8}
            onChange={(e) =>
              setTypes([...e.currentTarget.selectedOptions].map((o) => o.value as EventType))
            }
          >
            {allowedTypes.map((t) => (
              <option key={t} value={t} selected={types.includes(t)}>
                {t}
              </option>
            ))}
          </select>
        </div>
        <fieldset>
          <legend>Every event of these categories (optional)</legend>
          <ul class="checkboxes">
            {allowedCategories.map((c) => (
              <li key={c}>
                <label>
                  <input
                    type="checkbox"
                    checked={categories.includes(c)}
                    onChange={(e) =>
                      setCategories((now) =>
                        e.currentTarget.checked ? [...now, c] : now.filter((x) => x !== c),
                      )
                    }
                  />{' '}
                  <span class="mono">{c}</span>
                </label>
              </li>
            ))}
          </ul>
        </fieldset>
        <ErrorMessage error={create.error} />
        <button type="submit" class="primary" disabled={create.busy}>
          Create subscription
        </button>
      </form>
    </details>
  );
}

/** The signing secret, once: the service keeps it sealed and never shows it again. */
function SecretDialog({
  created,
  onClose,
}: {
  readonly created: CreatedWebhook;
  readonly onClose: () => void;
}) {
  return (
    <Dialog
      title={`Subscription ${created.subscription.subscription_id} created`}
      onClose={onClose}
    >
      <p>
        <strong>Copy the signing secret now: it is shown this once.</strong> Receivers check{' '}
        <span class="mono">X-Cycles-Signature</span> (sha256=HMAC-SHA256 of the raw body) with it.
      </p>
      <div class="field">
        <label for="new-webhook-secret">Signing secret</label>
        <input
          id="new-webhook-secret"
          class="mono secret"
          readOnly
          value={created.signing_secret}
          onFocus={(e) => e.currentTarget.select()}
        />
      </div>
      <div class="dialog-actions">
        <button type="button" class="primary" onClick={onClose}>
          I have stored it
        </button>
      </div>
    </Dialog>
  );
}

function ReplayDialog({
  subscription: s,
  onClose,
  onDone,
}: {
  readonly subscription: WebhookSubscription;
  readonly onClose: () => void;
  readonly onDone: (queued: number) => void;
}) {
  const { client } = useConsole();
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [max, setMax] = useState('100');
  const replay = useAction(async () => {
    const maxEvents = Number(max);
    if (!Number.isInteger(maxEvents) || maxEvents < 1 || maxEvents > 1000) {
      throw new InputError('a whole number from 1 to 1000.', 'At most');
    }
    const r = await unwrap(
      client.POST('/v1/admin/webhooks/{subscription_id}/replay', {
        params: { path: { subscription_id: s.subscription_id } },
        body: {
          ...(utcInputToIso(from) && { from: utcInputToIso(from) }),
          ...(utcInputToIso(to) && { to: utcInputToIso(to) }),
          max_events: maxEvents,
        },
      }),
    );
    onDone(r.events_queued);
  });
  return (
    <FormDialog
      title={`Replay events to ${s.name ?? s.subscription_id}`}
      onClose={onClose}
      action={replay}
      submit="Replay"
    >
      <p>
        Every event of the window this subscription receives is delivered again (the same event
        ids), or none is: a window with more than “at most” events is refused.
      </p>
      <div class="field">
        <label for="replay-from">From (UTC, empty: as far as events are kept)</label>
        <input
          id="replay-from"
          type="datetime-local"
          step={1}
          value={from}
          onInput={(e) => setFrom(e.currentTarget.value)}
        />
      </div>
      <div class="field">
        <label for="replay-to">To (UTC, empty: now)</label>
        <input
          id="replay-to"
          type="datetime-local"
          step={1}
          value={to}
          onInput={(e) => setTo(e.currentTarget.value)}
        />
      </div>
      <div class="field">
        <label for="replay-max">At most (events)</label>
        <input
          id="replay-max"
          inputMode="numeric"
          value={max}
          onInput={(e) => setMax(e.currentTarget.value)}
        />
      </div>
    </FormDialog>
  );
}

function FormDialogDelete({
  subscription: s,
  onClose,
  onDone,
}: {
  readonly subscription: WebhookSubscription;
  readonly onClose: () => void;
  readonly onDone: () => void;
}) {
  const { client } = useConsole();
  const remove = useAction(async () => {
    await unwrap(
      client.DELETE('/v1/admin/webhooks/{subscription_id}', {
        params: { path: { subscription_id: s.subscription_id } },
      }),
    );
    onDone();
  });
  return (
    <FormDialog
      title={`Delete subscription ${s.name ?? s.subscription_id}?`}
      onClose={onClose}
      action={remove}
      submit="Delete subscription"
      submitClass="danger"
    >
      <p>
        Its queued deliveries are dropped and its delivery log goes with it. It cannot be undone;
        pause it instead to stop deliveries for a while.
      </p>
    </FormDialog>
  );
}
