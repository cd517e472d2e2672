/**
 * Every custom metric the functions publish (CloudWatch EMF), as data: the functions emit from it
 * and the CDK dashboard and alarms read from it, so a renamed metric cannot leave a widget
 * pointing at nothing. Dimensions are closed sets (route ids, error codes, decisions, units),
 * never a tenant or an id; `perTenant` metrics also get a Tenant dimension set when
 * METRICS_TENANT_DIMENSION is on (docs/decisions.md, "Observability").
 */
export const METRICS_NAMESPACE = 'BudgetReservations';
/** The `service` of log lines, metrics and traces locally; the CDK app sets its stack's name. */
export const SERVICE_NAME = 'budget-reservations';

export type MetricUnit = 'Count' | 'Milliseconds' | 'None';

interface MetricSpec {
  readonly unit: MetricUnit;
  /** Dimension names besides `service` (always present). */
  readonly dimensions: readonly string[];
  readonly perTenant?: boolean;
}

export const METRICS = {
  /** Handler time of every HTTP request, per route id. */
  Latency: { unit: 'Milliseconds', dimensions: ['Route'] },
  /** DynamoDB commands sent by one request (or sweep pass); every transaction attempt counts. */
  DynamoDBCalls: { unit: 'Count', dimensions: [] },
  /** Attempts the SDK retried (throttling, 5xx, timeouts) inside those commands. */
  DynamoDBRetries: { unit: 'Count', dimensions: [] },
  /** Time one request (or sweep pass) waited on DynamoDB, retries included: the client's view. */
  DynamoDBTime: { unit: 'Milliseconds', dimensions: [] },
  /** Transactions sent again after a TransactionConflict cancellation (store/transact.ts). */
  ConflictRetries: { unit: 'Count', dimensions: [] },
  /** Requests answered with an error code (4xx), by code. */
  Refusals: { unit: 'Count', dimensions: ['Reason'], perTenant: true },
  /**
   * Busy answers: 429 when contention or throttling outlasted the retries or the deadline, 503
   * when the table timed out (`Reason`).
   */
  BusyAnswers: { unit: 'Count', dimensions: ['Reason'] },
  /** Live reservations decided: ALLOW, ALLOW_WITH_CAPS or DENY (replays are not counted). */
  Reservations: { unit: 'Count', dimensions: ['Decision'], perTenant: true },
  Commits: { unit: 'Count', dimensions: [], perTenant: true },
  /** Amount committed beyond the reservation, in the budget's unit (hence a Unit dimension). */
  OverageCharged: { unit: 'None', dimensions: ['Unit'], perTenant: true },
  Releases: { unit: 'Count', dimensions: [], perTenant: true },
  /** Charges of part of an actual on an ACTIVE reservation (POST …/charges). */
  Charges: { unit: 'Count', dimensions: [], perTenant: true },
  /** Child reservations carved from a parent's hold (POST …/delegations). */
  Delegations: { unit: 'Count', dimensions: [], perTenant: true },
  /** Amount refunded (reservations and events), in the budget's unit. */
  Refunded: { unit: 'None', dimensions: ['Unit'], perTenant: true },
  /**
   * actual ÷ estimate of each settled reservation (the stream consumer's, off the hot path):
   * one value per reservation, so CloudWatch's percentiles show how estimates fare.
   */
  EstimateRatio: { unit: 'None', dimensions: ['Unit'] },
  /** Reservations expired, by the sweeper or by a request that found them past their deadline. */
  Expiries: { unit: 'Count', dimensions: [], perTenant: true },
  /** Completed sweeper passes: the heartbeat alarm fires when they stop. */
  Sweeps: { unit: 'Count', dimensions: [] },
  /** How long past its deadline (expires_at + grace) the oldest due reservation was, per pass. */
  SweepLag: { unit: 'Milliseconds', dimensions: [] },
  /** Events derived and published by the stream consumer, by event type (docs/decisions.md). */
  BudgetEvents: { unit: 'Count', dimensions: ['Type'] },
  /** Webhook delivery attempts, by what came of them: SUCCESS, RETRYING or FAILED. */
  WebhookDeliveries: { unit: 'Count', dimensions: ['Outcome'] },
} as const satisfies Record<string, MetricSpec>;

export type MetricName = keyof typeof METRICS;
/** The dimension values a metric takes, e.g. `{ Decision: 'ALLOW' }`. */
export type DimensionsOf<M extends MetricName> = {
  readonly [D in (typeof METRICS)[M]['dimensions'][number]]: string;
};
