import { useEffect, useState } from 'preact/hooks';
import { RESERVATION_STATUSES, type Reservation, UNITS, type Unit } from '../../../client/index.js';
import { idempotencyKey, oneOf, unwrap } from '../api.js';
import {
  Badge,
  ChoiceSelect,
  ErrorMessage,
  FormDialog,
  Loading,
  PagedResults,
  RefreshButton,
  TableRegion,
  TenantSelect,
} from '../components.js';
import { useConsole } from '../context.js';
import { InputError } from '../errors.js';
import {
  amountInputLabel,
  formatDuration,
  formatTime,
  formatWire,
  parseAmount,
} from '../format.js';
import { useAction, useLoad, useNow, usePaged } from '../hooks.js';
import { navigate, type Params } from '../router.js';
import { DelegationTreeDialog } from './DelegationTree.js';

/**
 * A tenant's reservations (GET /v1/reservations?tenant= with the admin key, on the admin
 * server), ACTIVE ones with their age and deadline, the operator's force-release, refunds
 * of what reservations and usage events charged, and a reservation's tree of delegations.
 */
export function Reservations({ params }: { readonly params: Params }) {
  const { client, notify } = useConsole();
  const { tenant } = params;
  // ACTIVE unless the operator chose another status, or "any" (status=ANY).
  const status = params.status ?? 'ACTIVE';
  const list = usePaged<Reservation>(
    async (cursor) => {
      const page = await unwrap(
        client.GET('/v1/reservations', {
          params: {
            query: { tenant, status: oneOf(RESERVATION_STATUSES, status), cursor, limit: 50 },
          },
        }),
      );
      return { items: page.reservations, cursor: page.next_cursor };
    },
    [client, tenant, status],
    tenant !== undefined,
  );
  const now = useNow(1_000);
  const [releasing, setReleasing] = useState<Reservation>();
  const [refunding, setRefunding] = useState<Reservation>();
  const [tree, setTree] = useState<Reservation>();

  return (
    <>
      <div class="filters">
        <TenantSelect
          value={tenant}
          onChange={(t) => navigate('reservations', { tenant: t, status: params.status })}
        />
        <div class="field">
          <label for="reservation-status">Status</label>
          <select
            id="reservation-status"
            value={status}
            onChange={(e) => navigate('reservations', { tenant, status: e.currentTarget.value })}
          >
            {RESERVATION_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
            <option value="ANY">Any status</option>
          </select>
        </div>
        <RefreshButton onRefresh={list.reload} disabled={tenant === undefined || list.loading} />
      </div>
      {tenant === undefined ? (
        <p>Choose a tenant to see its reservations.</p>
      ) : (
        <section aria-labelledby="reservation-list">
          <h2 id="reservation-list">
            {status === 'ANY' ? 'All' : status.charAt(0) + status.slice(1).toLowerCase()}{' '}
            reservations of {tenant}, newest first
          </h2>
          <PagedResults list={list} what="reservations" empty={<p>None.</p>}>
            <TableRegion label="Reservations">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Reservation</th>
                    <th scope="col">Scope</th>
                    <th scope="col">Action</th>
                    <th scope="col">Reserved</th>
                    <th scope="col">Status</th>
                    <th scope="col">Age</th>
                    <th scope="col">Deadline</th>
                    <th scope="col">
                      <span class="visually-hidden">Force-release or refund</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {list.items.map((r) => (
                    <tr key={r.reservation_id}>
                      <th scope="row">
                        <span class="mono">{r.reservation_id}</span>
                        <br />
                        <span class="muted">{r.idempotency_key}</span>
                      </th>
                      <td class="mono">{r.scope_path}</td>
                      <td>
                        {r.action.kind}
                        <br />
                        <span class="muted">{r.action.name}</span>
                      </td>
                      <td>
                        {formatWire(r.reserved)}
                        {r.committed && (
                          <>
                            <br />
                            <span class="muted">committed {formatWire(r.committed)}</span>
                          </>
                        )}
                      </td>
                      <td>
                        <Badge value={r.status} />
                      </td>
                      <td>{formatDuration(now - r.created_at_ms)}</td>
                      <td>
                        <Deadline reservation={r} now={now} />
                      </td>
                      <td>
                        {r.status === 'ACTIVE' && (
                          <button type="button" class="danger" onClick={() => setReleasing(r)}>
                            Release…<span class="visually-hidden"> {r.reservation_id}</span>
                          </button>
                        )}{' '}
                        <button type="button" onClick={() => setRefunding(r)}>
                          Refund…<span class="visually-hidden"> {r.reservation_id}</span>
                        </button>{' '}
                        <button type="button" onClick={() => setTree(r)}>
                          Delegations…<span class="visually-hidden"> {r.reservation_id}</span>
                        </button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableRegion>
          </PagedResults>
        </section>
      )}
      {tenant !== undefined && <RefundEvent tenant={tenant} />}
      {refunding && (
        <RefundDialog
          reservation={refunding}
          onClose={() => setRefunding(undefined)}
          onDone={(message) => {
            notify(message);
            setRefunding(undefined);
            list.reload();
          }}
        />
      )}
      {tree && <DelegationTreeDialog reservation={tree} onClose={() => setTree(undefined)} />}
      {releasing && (
        <ReleaseDialog
          reservation={releasing}
          onClose={() => setReleasing(undefined)}
          onDone={() => {
            notify(`Reservation ${releasing.reservation_id} released.`);
            setReleasing(undefined);
            list.reload();
          }}
        />
      )}
    </>
  );
}

function Deadline({
  reservation: r,
  now,
}: {
  readonly reservation: Reservation;
  readonly now: number;
}) {
  if (r.status !== 'ACTIVE') {
    return r.finalized_at_ms === undefined ? null : (
      <span class="muted">ended {formatTime(r.finalized_at_ms)}</span>
    );
  }
  const left = r.expires_at_ms - now;
  return (
    <>
      <span class={left < 0 ? 'alert-text' : undefined}>
        {left >= 0 ? `in ${formatDuration(left)}` : `overdue by ${formatDuration(-left)}`}
      </span>
      <br />
      <span class="muted">{formatTime(r.expires_at_ms)}</span>
    </>
  );
}

/** POST /v1/reservations/{id}/release with the admin key: the reason lands in the audit trail. */
function ReleaseDialog({
  reservation: r,
  onClose,
  onDone,
}: {
  readonly reservation: Reservation;
  readonly onClose: () => void;
  readonly onDone: () => void;
}) {
  const { client } = useConsole();
  const [reason, setReason] = useState('');
  const [key, setKey] = useState(() => idempotencyKey('release'));
  useEffect(() => setKey(idempotencyKey('release')), [reason]);
  const release = useAction(async () => {
    await unwrap(
      client.POST('/v1/reservations/{reservation_id}/release', {
        params: { path: { reservation_id: r.reservation_id } },
        body: { idempotency_key: key, reason: reason.trim() },
      }),
    );
    onDone();
  });
  return (
    <FormDialog
      title={`Force-release ${r.reservation_id}?`}
      onClose={onClose}
      action={release}
      submit="Release reservation"
      submitClass="danger"
      disabled={reason.trim() === ''}
    >
      <p>
        Its hold of {formatWire(r.reserved)} on {r.scope_path} returns to the budgets at once; the
        agent that holds it gets 409 RESERVATION_FINALIZED when it commits.
      </p>
      <div class="field">
        <label for="release-reason">Reason (kept in the audit trail)</label>
        <input
          id="release-reason"
          required
          maxLength={256}
          value={reason}
          onInput={(e) => setReason(e.currentTarget.value)}
        />
      </div>
    </FormDialog>
  );
}

/**
 * POST /v1/reservations/{id}/refunds with the admin key: gives back part of what the reservation
 * charged (its charges, or once committed its whole actual) on every scope it charged; audited,
 * and announced as a custom.refund event. The charges and totals come from GET …/charges.
 */
function RefundDialog({
  reservation: r,
  onClose,
  onDone,
}: {
  readonly reservation: Reservation;
  readonly onClose: () => void;
  readonly onDone: (message: string) => void;
}) {
  const { client } = useConsole();
  const charges = useLoad(
    () =>
      unwrap(
        client.GET('/v1/reservations/{reservation_id}/charges', {
          params: { path: { reservation_id: r.reservation_id }, query: { limit: 50 } },
        }),
      ),
    [client, r.reservation_id],
  );
  const [amount, setAmount] = useState('');
  const [reason, setReason] = useState('');
  const [key, setKey] = useState(() => idempotencyKey('refund'));
  useEffect(() => setKey(idempotencyKey('refund')), [amount, reason]);
  const c = charges.data;
  const charged = r.committed?.amount ?? c?.charged_total.amount ?? 0;
  const left = Math.max(0, charged - (c?.refunded_total.amount ?? 0));
  const refund = useAction(async () => {
    const refunded = await unwrap(
      client.POST('/v1/reservations/{reservation_id}/refunds', {
        params: { path: { reservation_id: r.reservation_id } },
        body: {
          idempotency_key: key,
          amount: { unit: r.reserved.unit, amount: refundAmount(amount, r.reserved.unit) },
          reason: reason.trim(),
        },
      }),
    );
    onDone(
      `Refunded ${formatWire(refunded.amount)} of ${r.reservation_id}; ${formatWire(refunded.refundable)} left to refund.`,
    );
  });
  return (
    <FormDialog
      title={`Refund ${r.reservation_id}`}
      onClose={onClose}
      action={refund}
      submit="Refund"
      disabled={reason.trim() === '' || amount.trim() === '' || left === 0}
    >
      <ErrorMessage error={charges.error} />
      {charges.loading ? (
        <Loading what="charges" />
      ) : (
        <p>
          {r.committed
            ? `Committed ${formatWire(r.committed)}`
            : `Charged ${formatWire({ unit: r.reserved.unit, amount: charged })} in ${c?.charges.length ?? 0} charge(s)`}
          , refunded {c ? formatWire(c.refunded_total) : '…'}:{' '}
          {formatWire({ unit: r.reserved.unit, amount: left })} can be refunded, on every scope it
          charged (debt it ran up first).
        </p>
      )}
      <RefundFields
        id="refund"
        unit={r.reserved.unit}
        amount={amount}
        reason={reason}
        onAmount={setAmount}
        onReason={setReason}
      />
    </FormDialog>
  );
}

/** POST /v1/events/{id}/refunds with the admin key, for a usage event named by its id. */
function RefundEvent({ tenant }: { readonly tenant: string }) {
  const { client, notify } = useConsole();
  const [eventId, setEventId] = useState('');
  const [unit, setUnit] = useState<Unit>('USD_MICROCENTS');
  const [amount, setAmount] = useState('');
  const [reason, setReason] = useState('');
  const [key, setKey] = useState(() => idempotencyKey('refund'));
  useEffect(() => setKey(idempotencyKey('refund')), [eventId, unit, amount, reason]);
  const refund = useAction(async () => {
    const refunded = await unwrap(
      client.POST('/v1/events/{event_id}/refunds', {
        params: { path: { event_id: eventId.trim() } },
        body: {
          idempotency_key: key,
          amount: { unit, amount: refundAmount(amount, unit) },
          reason: reason.trim(),
        },
      }),
    );
    notify(
      `Refunded ${formatWire(refunded.amount)} of event ${eventId.trim()}; ${formatWire(refunded.refundable)} left to refund.`,
    );
    setAmount('');
  });
  return (
    <details class="panel">
      <summary>Refund a usage event of {tenant}</summary>
      <form
        class="stacked-form"
        onSubmit={(e) => {
          e.preventDefault();
          void refund.run();
        }}
      >
        <div class="field">
          <label for="refund-event-id">Event id (evt_…, as POST /v1/events answered it)</label>
          <input
            id="refund-event-id"
            class="mono"
            required
            value={eventId}
            onInput={(e) => setEventId(e.currentTarget.value)}
          />
        </div>
        <ChoiceSelect
          id="refund-event-unit"
          label="Unit"
          value={unit}
          options={UNITS}
          any={false}
          onChange={(u) => setUnit(u as Unit)}
        />
        <RefundFields
          id="refund-event"
          unit={unit}
          amount={amount}
          reason={reason}
          onAmount={setAmount}
          onReason={setReason}
        />
        <ErrorMessage error={refund.error} />
        <button type="submit" class="primary" disabled={refund.busy}>
          Refund event
        </button>
      </form>
    </details>
  );
}

/** The amount (in the unit's own terms: dollars for USD_MICROCENTS) and reason of a refund. */
function RefundFields(p: {
  readonly id: string;
  readonly unit: Unit;
  readonly amount: string;
  readonly reason: string;
  readonly onAmount: (text: string) => void;
  readonly onReason: (text: string) => void;
}) {
  return (
    <>
      <div class="field">
        <label for={`${p.id}-amount`}>{amountInputLabel(p.unit)}</label>
        <input
          id={`${p.id}-amount`}
          inputMode="decimal"
          required
          value={p.amount}
          onInput={(e) => p.onAmount(e.currentTarget.value)}
        />
      </div>
      <div class="field">
        <label for={`${p.id}-reason`}>Reason (kept in the audit trail and the event)</label>
        <input
          id={`${p.id}-reason`}
          required
          maxLength={1024}
          value={p.reason}
          onInput={(e) => p.onReason(e.currentTarget.value)}
        />
      </div>
    </>
  );
}

/** The refund's amount as typed, or an error for the form to show. */
function refundAmount(text: string, unit: Unit): number {
  const parsed = parseAmount(text, unit);
  if ('error' in parsed) throw new InputError(parsed.error, 'Amount');
  return parsed.amount;
}
