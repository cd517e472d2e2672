import type { Delegation, Reservation } from '../../../client/index.js';
import { unwrap } from '../api.js';
import { Badge, Dialog, ErrorMessage, Loading } from '../components.js';
import { useConsole } from '../context.js';
import { formatTime, formatWire } from '../format.js';
import { useLoad } from '../hooks.js';

/** Levels the tree opens (the service's limit: docs/decisions.md § Delegations). */
const MAX_DEPTH = 4;

/**
 * A reservation's delegations (ours: sub-agent budgets), as a tree: GET …/delegations with the
 * admin key, level by level, each child with its state, what it holds and what it spent.
 */
export function DelegationTreeDialog({
  reservation: r,
  onClose,
}: {
  readonly reservation: Reservation;
  readonly onClose: () => void;
}) {
  return (
    <Dialog title={`Delegations of ${r.reservation_id}`} onClose={onClose} wide>
      <Children parentId={r.reservation_id} depth={1} />
      <div class="dialog-actions">
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
    </Dialog>
  );
}

function Children({ parentId, depth }: { readonly parentId: string; readonly depth: number }) {
  const { client } = useConsole();
  const page = useLoad(
    () =>
      unwrap(
        client.GET('/v1/reservations/{reservation_id}/delegations', {
          params: { path: { reservation_id: parentId }, query: { limit: 50 } },
        }),
      ),
    [client, parentId],
  );
  if (page.loading && !page.data) return <Loading what="delegations" />;
  const p = page.data;
  return (
    <>
      <ErrorMessage error={page.error} />
      {p && depth === 1 && (
        <p>
          <Badge value={p.status} /> holds {formatWire(p.held)} itself;{' '}
          {p.delegations.length === 0
            ? 'no delegations.'
            : `${p.delegations.length} delegation(s):`}
        </p>
      )}
      {p && p.delegations.length > 0 && (
        <ul class="tree" aria-label={`Delegations of ${parentId}`}>
          {p.delegations.map((d) => (
            <Child key={d.reservation_id} delegation={d} depth={depth} />
          ))}
          {p.has_more && <li class="muted">… more (the CLI lists them all)</li>}
        </ul>
      )}
    </>
  );
}

function Child({
  delegation: d,
  depth,
}: {
  readonly delegation: Delegation;
  readonly depth: number;
}) {
  return (
    <li>
      <span class="mono">{d.reservation_id}</span> <Badge value={d.status} />{' '}
      <span class="mono">{d.scope_path}</span>
      <br />
      <span class="muted">
        reserved {formatWire(d.reserved)} · holds {formatWire(d.held)} · spent{' '}
        {formatWire(d.charged)} · expires {formatTime(d.expires_at_ms)}
      </span>
      {depth < MAX_DEPTH && <Children parentId={d.reservation_id} depth={depth + 1} />}
    </li>
  );
}
