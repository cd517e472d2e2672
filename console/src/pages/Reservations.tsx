import { useEffect, useState } from 'preact/hooks';
import { RESERVATION_STATUSES, type Reservation } from '../../../client/index.js';
import { idempotencyKey, oneOf, unwrap } from '../api.js';
import {
  Badge,
  FormDialog,
  PagedResults,
  RefreshButton,
  TableRegion,
  TenantSelect,
} from '../components.js';
import { useConsole } from '../context.js';
import { formatDuration, formatTime, formatWire } from '../format.js';
import { useAction, useNow, usePaged } from '../hooks.js';
import { navigate, type Params } from '../router.js';

/**
 * A tenant's reservations (GET /v1/reservations?tenant= with the admin key, on the admin
 * server), ACTIVE ones with their age and deadline, and the operator's force-release.
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
                      <span class="visually-hidden">Force-release</span>
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
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableRegion>
          </PagedResults>
        </section>
      )}
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
