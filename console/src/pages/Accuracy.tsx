import type { AccuracyFigures, Budget } from '../../../client/index.js';
import { unwrap } from '../api.js';
import { Dialog, ErrorMessage, Loading, TableRegion } from '../components.js';
import { useConsole } from '../context.js';
import { formatTime, formatWire } from '../format.js';
import { useLoad } from '../hooks.js';

/**
 * GET /v1/admin/budgets/accuracy?scope=&unit=: how the estimates of the reservations settled on
 * a budget compared with what they spent, per action kind, with the estimate that would have
 * covered 95 % of the actuals and the budget their holds kept idle (docs/decisions.md §
 * Estimate accuracy). Aggregated from the table's stream, seconds behind.
 */
export function AccuracyDialog({
  budget: b,
  onClose,
}: {
  readonly budget: Budget;
  readonly onClose: () => void;
}) {
  const { client } = useConsole();
  const accuracy = useLoad(
    () =>
      unwrap(
        client.GET('/v1/admin/budgets/accuracy', {
          params: { query: { scope: b.scope, unit: b.unit } },
        }),
      ),
    [client, b.scope, b.unit],
  );
  const a = accuracy.data;
  const rows: [string, AccuracyFigures][] = a
    ? [
        ...a.kinds.map((k): [string, AccuracyFigures] => [k.kind, k]),
        ...(a.other.settled + a.other.released + a.other.expired > 0
          ? [['other kinds', a.other] as [string, AccuracyFigures]]
          : []),
      ]
    : [];
  return (
    <Dialog title={`Estimate accuracy of ${b.scope}`} onClose={onClose} wide>
      <ErrorMessage error={accuracy.error} />
      {accuracy.loading || !a ? (
        <Loading what="estimate accuracy" />
      ) : rows.length === 0 ? (
        <p>No reservation has settled on this budget yet.</p>
      ) : (
        <>
          <p class="muted">
            Σ actual ÷ Σ estimate: {ratio(a.total)}; budget held and never spent:{' '}
            {unitSeconds(a.total)}.
          </p>
          <TableRegion label="Estimate accuracy by action kind">
            <table>
              <thead>
                <tr>
                  <th scope="col">Action kind</th>
                  <th scope="col">Settled</th>
                  <th scope="col">Actual ÷ estimate</th>
                  <th scope="col">Suggested estimate (covers 95 %)</th>
                  <th scope="col">Held, never spent</th>
                  <th scope="col">Released / expired unspent</th>
                  <th scope="col">Spread of actual ÷ estimate</th>
                </tr>
              </thead>
              <tbody>
                {rows.map(([kind, f]) => (
                  <tr key={kind}>
                    <th scope="row">
                      {kind}
                      {f.last_settled_at && (
                        <>
                          <br />
                          <span class="muted">last {formatTime(f.last_settled_at)}</span>
                        </>
                      )}
                    </th>
                    <td>{f.settled}</td>
                    <td>
                      {ratio(f)}
                      <br />
                      <span class="muted">
                        {formatWire(f.actual_total)} of {formatWire(f.estimate_total)}
                      </span>
                    </td>
                    <td>
                      {f.suggested_estimate
                        ? `${formatWire(f.suggested_estimate)} (${f.coverage_95_ratio}× the mean)`
                        : '—'}
                    </td>
                    <td>{unitSeconds(f)}</td>
                    <td>
                      {f.released} / {f.expired}
                    </td>
                    <td class="mono">{spread(f, a.ratio_bounds)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableRegion>
        </>
      )}
      <div class="dialog-actions">
        <button type="button" class="primary" onClick={onClose}>
          Close
        </button>
      </div>
    </Dialog>
  );
}

const ratio = (f: AccuracyFigures) =>
  f.actual_to_estimate === undefined ? '—' : f.actual_to_estimate.toFixed(2);

const unitSeconds = (f: AccuracyFigures) =>
  `${Math.round(f.held_unspent_unit_seconds).toLocaleString('en-US')} unit-seconds`;

/** The histogram's non-empty buckets as `≤ 0.5: 3 · ≤ 1: 7 · > 5: 1`. */
function spread(f: AccuracyFigures, bounds: readonly number[]): string {
  return (
    f.histogram
      .map((n, i) => {
        if (n === 0) return undefined;
        const bound = bounds[i];
        return bound === undefined ? `> ${bounds.at(-1)}: ${n}` : `≤ ${bound}: ${n}`;
      })
      .filter(Boolean)
      .join(' · ') || '—'
  );
}
