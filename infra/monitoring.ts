import { Duration } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import {
  AlarmStatusWidget,
  ComparisonOperator,
  type IAlarm,
  type IMetric,
  MathExpression,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { BillingMode, type ITable, Operation } from 'aws-cdk-lib/aws-dynamodb';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { FilterPattern, type ILogGroup, MetricFilter } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import {
  type CustomMetric,
  type CustomMetricSearch,
  DefaultDashboardFactory,
  LatencyType,
  MetricStatistic,
  MonitoringFacade,
  SnsAlarmActionStrategy,
} from 'cdk-monitoring-constructs';
import { Construct } from 'constructs';
import type { Server } from '../functions/routes.js';
import { METRICS_NAMESPACE, type MetricName } from '../functions/telemetry/catalog.js';

/** An HTTP API as monitoring sees it: its metrics, its access logs, and the stacks of its functions. */
export interface MonitoredApi {
  readonly api: HttpApi;
  /** The stage's JSON access logs (infra/api-stack.ts): 429s are counted from them. */
  readonly accessLogs: ILogGroup;
  /** Names of the stacks holding its route functions: function names start with them. */
  readonly functionStacks: readonly string[];
}

export interface ServiceMonitoringProps {
  /** The `service` dimension of the functions' EMF metrics (their POWERTOOLS_SERVICE_NAME). */
  readonly serviceName: string;
  readonly apis: Readonly<Record<Server, MonitoredApi>>;
  readonly sweeper: IFunction;
  /** The budget events consumer and the DLQ of its stream mapping. @default - not watched */
  readonly budgetEvents?: {
    readonly consumer: IFunction;
    readonly dlq: IQueue;
    /** The webhook delivery function and its queue's dead letters. */
    readonly delivery: IFunction;
    readonly deliveryDlq: IQueue;
  };
  readonly table: ITable;
  /** Every alarm notifies it. */
  readonly topic: ITopic;
  /** The heartbeat fires when no sweep completed for this long. @default Duration.minutes(5) */
  readonly sweeperHeartbeat?: Duration;
  /** SweeperLag fires when a due reservation waited longer than this. @default Duration.minutes(3) */
  readonly maxSweepLag?: Duration;
  /** IteratorAge fires when the stream consumer is this far behind. @default Duration.minutes(5) */
  readonly maxIteratorAge?: Duration;
}

/** Requests the stage's own throttling refused (429), counted from its access logs per API. */
export const STAGE_THROTTLED_METRIC = 'StageThrottled';

const PERIOD = Duration.minutes(5);
const pascal = (id: string) => id.charAt(0).toUpperCase() + id.slice(1);
const atLeast = (threshold: number) => ({
  threshold,
  comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
});

/**
 * The service's one CloudWatch dashboard and its alarms, built with cdk-monitoring-constructs:
 * alarm status first, then Lambda throttles, per API (requests, latency p50/p99, 4xx/5xx, the
 * 5xx, 4xx and 429 shares, throttles and errors by function), the service's own EMF metrics
 * (decisions, refusals, settlements, latency per route), DynamoDB (throttles, conflicts,
 * retries, time), the sweeper (lag, heartbeat, errors) and budget events (iterator age, DLQ).
 * Every alarm is named `<prefix>-<subject>-<what>-Critical`, notifies the alarm topic and shows
 * in the alarm widget.
 */
export class ServiceMonitoring extends Construct {
  readonly facade: MonitoringFacade;

  constructor(scope: Construct, id: string, props: ServiceMonitoringProps) {
    super(scope, id);
    const prefix = props.serviceName;
    this.facade = new MonitoringFacade(this, 'Facade', {
      metricFactoryDefaults: { namespace: METRICS_NAMESPACE, period: PERIOD },
      alarmFactoryDefaults: {
        alarmNamePrefix: prefix,
        actionsEnabled: true,
        action: new SnsAlarmActionStrategy({ onAlarmTopic: props.topic }),
        // One breaching 5-minute period is enough: these are all "something is wrong now".
        datapointsToAlarm: 1,
        evaluationPeriods: 1,
      },
      dashboardFactory: new DefaultDashboardFactory(this, 'Dashboards', {
        dashboardNamePrefix: prefix,
        detailDashboardRange: Duration.hours(3),
      }),
    });
    // Filled once every alarm below exists: the widget renders its list at synthesis.
    const alarms: IAlarm[] = [];
    this.facade
      .addLargeHeader(`Budget reservations (${prefix})`)
      .addWidget(new AlarmStatusWidget({ title: 'Alarms', alarms, width: 24, height: 6 }));
    this.lambdaThrottles();
    for (const server of ['runtime', 'admin'] as const) this.api(server, props);
    this.serviceMetrics(props);
    this.dynamo(props);
    this.sweeper(props);
    this.budgetEvents(props);
    alarms.push(...this.facade.createdAlarms().map((a) => a.alarm));
  }

  /** An EMF metric of the catalog, summed or as a statistic, with dimensions besides service. */
  private emf(
    name: MetricName,
    statistic: string,
    dimensions: Record<string, string>,
    serviceName: string,
  ): Metric {
    return new Metric({
      namespace: METRICS_NAMESPACE,
      metricName: name,
      dimensionsMap: { service: serviceName, ...dimensions },
      statistic,
      period: PERIOD,
      label: Object.values(dimensions).join(' ') || name,
    });
  }

  /** A search over one dimension of an EMF metric: one line per value seen (route, reason…). */
  private search(
    name: MetricName,
    dimension: string,
    statistic: MetricStatistic,
    serviceName: string,
  ): CustomMetricSearch {
    return {
      searchQuery: `MetricName="${name}"`,
      // An undefined value puts the dimension in the search schema without fixing its value.
      dimensionsMap: { service: serviceName, [dimension]: undefined as unknown as string },
      statistic,
      label: `\${PROP('Dim.${dimension}')}`,
    };
  }

  /**
   * One alarm for every function: Lambda's Throttles across the account's functions in the
   * region. Ours share the account's unreserved concurrency, so a throttle anywhere there means
   * ours can be refused too; the API rows below show which functions it hit.
   */
  private lambdaThrottles(): void {
    this.facade.monitorCustom({
      humanReadableName: 'Lambda throttles (all functions of the account and region)',
      alarmFriendlyName: 'Lambda',
      metricGroups: [
        {
          title: 'Throttled invocations',
          metrics: [
            {
              metric: new Metric({
                namespace: 'AWS/Lambda',
                metricName: 'Throttles',
                statistic: 'Sum',
                period: PERIOD,
                label: 'throttled invocations',
              }),
              alarmFriendlyName: 'Throttles',
              addAlarm: {
                Critical: {
                  ...atLeast(1),
                  treatMissingDataOverride: TreatMissingData.NOT_BREACHING,
                  alarmDescriptionOverride:
                    "Lambda throttled invocations: the account's concurrency is exhausted (API requests answer 503)",
                },
              },
            },
          ],
        },
      ],
    });
  }

  private api(server: Server, props: ServiceMonitoringProps): void {
    const { api, accessLogs, functionStacks } = props.apis[server];
    const name = `${pascal(server)}Api`;
    this.facade.monitorApiGatewayV2HttpApi({
      api,
      apiStage: '$default',
      humanReadableName: `${pascal(server)} API`,
      alarmFriendlyName: name,
      latencyTypesToRender: [LatencyType.P50, LatencyType.P99],
    });
    const requests = api.metricCount({ period: PERIOD, statistic: 'Sum' });
    // The stage's own rate limit answers 429 without invoking anything: only its access logs
    // tell a 429 from the other 4xx.
    new MetricFilter(this, `${name}StageThrottled`, {
      logGroup: accessLogs,
      filterPattern: FilterPattern.stringValue('$.status', '=', '429'),
      metricNamespace: METRICS_NAMESPACE,
      metricName: STAGE_THROTTLED_METRIC,
      metricValue: '1',
      dimensions: { service: '$.service', Api: '$.api' },
    });
    const throttled = new Metric({
      namespace: METRICS_NAMESPACE,
      metricName: STAGE_THROTTLED_METRIC,
      dimensionsMap: { service: props.serviceName, Api: server },
      statistic: 'Sum',
      period: PERIOD,
    });
    const share = (
      label: string,
      part: IMetric,
      threshold: number,
      minRequests: number,
      description: string,
      periods = 1,
    ): CustomMetric => ({
      // Ids must differ between the expressions of one graph: s5xx, s4xx, s429.
      metric: new MathExpression({
        expression: `IF(requests >= ${minRequests}, 100 * s${label.slice(0, 3)} / requests, 0)`,
        usingMetrics: { [`s${label.slice(0, 3)}`]: part, requests },
        period: PERIOD,
        label,
      }),
      alarmFriendlyName: label.replace(/ .*/, '').replace('%', 'Rate'),
      addAlarm: {
        Critical: {
          ...atLeast(threshold),
          treatMissingDataOverride: TreatMissingData.NOT_BREACHING,
          evaluationPeriods: periods,
          datapointsToAlarm: periods,
          alarmDescriptionOverride: description,
        },
      },
    });
    // Per function, found by their names (they start with their stack's name): no alarm each.
    const byFunction = (metricName: string) =>
      functionStacks.map(
        (stack): CustomMetricSearch => ({
          namespace: 'AWS/Lambda',
          searchQuery: `MetricName="${metricName}" "${stack}"`,
          dimensionsMap: { FunctionName: undefined as unknown as string },
          statistic: MetricStatistic.SUM,
          label: `\${PROP('Dim.FunctionName')}`,
        }),
      );
    this.facade.monitorCustom({
      humanReadableName: `${pascal(server)} API: error shares, functions`,
      alarmFriendlyName: name,
      metricGroups: [
        {
          title: '5xx, 4xx and 429 % of requests',
          metrics: [
            share(
              '5xx% of requests',
              api.metricServerError({ period: PERIOD, statistic: 'Sum' }),
              1,
              1,
              `1% or more of ${server} API requests answered 5xx over 5 minutes`,
            ),
            share(
              '4xx% of requests',
              api.metricClientError({ period: PERIOD, statistic: 'Sum' }),
              25,
              100,
              `a quarter or more of ${server} API requests were refused (4xx) for 15 minutes: a broken client, a revoked key in use, a runaway agent against its budget`,
              3,
            ),
            share(
              '429% of requests',
              throttled,
              1,
              1,
              `1% or more of ${server} API requests were over the stage's rate limit (429) over 5 minutes`,
            ),
          ],
        },
        { title: 'Lambda throttles by function', metrics: byFunction('Throttles') },
        { title: 'Lambda errors by function', metrics: byFunction('Errors') },
      ],
    });
  }

  private serviceMetrics({ serviceName: s }: ServiceMonitoringProps): void {
    const sum = MetricStatistic.SUM;
    this.facade.monitorCustom({
      humanReadableName: 'Reservations (EMF metrics of the functions)',
      alarmFriendlyName: 'Service',
      metricGroups: [
        {
          title: 'Reservations by decision',
          metrics: ['ALLOW', 'ALLOW_WITH_CAPS', 'DENY'].map((d) =>
            this.emf('Reservations', 'Sum', { Decision: d }, s),
          ),
        },
        { title: 'Refusals by reason', metrics: [this.search('Refusals', 'Reason', sum, s)] },
        {
          // The functions' rate limits (docs/decisions.md § Rate limits); the stage throttle's
          // 429s are on the API widgets, the edge's WAF answers before any function.
          title: 'Rate limits: requests refused 429 RATE_LIMIT',
          metrics: [
            this.emf('BusyAnswers', 'Sum', { Reason: 'RATE_LIMIT' }, s).with({
              label: "429: a key's, tenant's or policy's rate limit",
            }),
          ],
        },
        {
          title: 'Settlements',
          metrics: (['Commits', 'Charges', 'Delegations', 'Releases', 'Expiries'] as const).map(
            (m) => this.emf(m, 'Sum', {}, s),
          ),
        },
        {
          title: 'Overage charged, by unit',
          metrics: [this.search('OverageCharged', 'Unit', sum, s)],
        },
        { title: 'Refunded, by unit', metrics: [this.search('Refunded', 'Unit', sum, s)] },
        {
          // From the estimate accuracy consumer: one value per settled reservation.
          title: 'Actual ÷ estimate, p50 and p90 by unit',
          metrics: [
            this.search('EstimateRatio', 'Unit', MetricStatistic.P50, s),
            this.search('EstimateRatio', 'Unit', MetricStatistic.P90, s),
          ],
        },
        {
          title: 'Latency p99 by route (ms)',
          metrics: [this.search('Latency', 'Route', MetricStatistic.P99, s)],
        },
        {
          title: 'Latency p50 by route (ms)',
          metrics: [this.search('Latency', 'Route', MetricStatistic.P50, s)],
        },
      ],
    });
  }

  private dynamo(props: ServiceMonitoringProps): void {
    const s = props.serviceName;
    this.facade.monitorDynamoTable({
      table: props.table,
      billingMode: BillingMode.PAY_PER_REQUEST,
      humanReadableName: 'DynamoDB table',
      alarmFriendlyName: 'Table',
    });
    const throttled: IMetric = props.table.metricThrottledRequestsForOperations({
      operations: [
        Operation.GET_ITEM,
        Operation.BATCH_GET_ITEM,
        Operation.QUERY,
        Operation.PUT_ITEM,
        Operation.UPDATE_ITEM,
        Operation.TRANSACT_WRITE_ITEMS,
      ],
      period: PERIOD,
    });
    this.facade.monitorCustom({
      humanReadableName: 'DynamoDB: throttles and transaction conflicts',
      alarmFriendlyName: 'Table',
      metricGroups: [
        {
          title: 'Throttled requests',
          metrics: [
            {
              metric: throttled as MathExpression,
              alarmFriendlyName: 'Throttles',
              addAlarm: {
                Critical: {
                  ...atLeast(1),
                  treatMissingDataOverride: TreatMissingData.NOT_BREACHING,
                  alarmDescriptionOverride: 'DynamoDB throttled requests to the table',
                },
              },
            },
          ],
        },
        {
          title: 'Transaction conflicts',
          metrics: [
            new Metric({
              namespace: 'AWS/DynamoDB',
              metricName: 'TransactionConflict',
              dimensionsMap: { TableName: props.table.tableName },
              statistic: 'Sum',
              period: PERIOD,
              label: 'rejected item requests (DynamoDB)',
            }),
            this.emf('ConflictRetries', 'Sum', {}, s).with({ label: 'transactions retried' }),
            this.emf('BusyAnswers', 'Sum', { Reason: 'CONTENTION' }, s).with({
              label: '429: contention outlasted retries',
            }),
            this.emf('BusyAnswers', 'Sum', { Reason: 'THROTTLED' }, s).with({
              label: '429: throttling outlasted retries',
            }),
            this.emf('BusyAnswers', 'Sum', { Reason: 'TIMEOUT' }, s).with({
              label: '503: the table did not answer in time',
            }),
          ],
        },
        {
          title: 'DynamoDB calls and SDK retries per request',
          metrics: [
            this.emf('DynamoDBCalls', 'Average', {}, s).with({ label: 'calls (avg)' }),
            this.emf('DynamoDBRetries', 'Sum', {}, s).with({ label: 'SDK retries' }),
          ],
        },
        {
          title: 'Time waiting on DynamoDB per request (ms)',
          metrics: [
            this.emf('DynamoDBTime', 'p50', {}, s).with({ label: 'p50' }),
            this.emf('DynamoDBTime', 'p99', {}, s).with({ label: 'p99' }),
          ],
        },
      ],
    });
  }

  private sweeper(props: ServiceMonitoringProps): void {
    const s = props.serviceName;
    const heartbeat = props.sweeperHeartbeat ?? Duration.minutes(5);
    const maxLag = props.maxSweepLag ?? Duration.minutes(3);
    this.facade.monitorLambdaFunction({
      lambdaFunction: props.sweeper,
      humanReadableName: 'Expiry sweeper',
      alarmFriendlyName: 'Sweeper',
      addFaultCountAlarm: {
        Critical: {
          maxErrorCount: 0,
          alarmDescriptionOverride:
            'the expiry sweeper failed (or timed out); reservations may expire late',
        },
      },
    });
    this.facade.monitorCustom({
      humanReadableName: 'Expiry sweeper: lag and heartbeat',
      alarmFriendlyName: 'Sweeper',
      metricGroups: [
        {
          title: 'Sweep lag (ms past the deadline, max)',
          metrics: [
            {
              metric: this.emf('SweepLag', 'Maximum', {}, s),
              alarmFriendlyName: 'Lag',
              addAlarm: {
                Critical: {
                  ...atLeast(maxLag.toMilliseconds()),
                  treatMissingDataOverride: TreatMissingData.NOT_BREACHING,
                  alarmDescriptionOverride: `a due reservation waited more than ${maxLag.toHumanString()} for the sweeper`,
                },
              },
            },
          ],
        },
        {
          title: 'Sweeps completed and reservations expired',
          metrics: [
            {
              metric: this.emf('Sweeps', 'Sum', {}, s).with({ period: heartbeat }),
              alarmFriendlyName: 'Heartbeat',
              addAlarm: {
                Critical: {
                  threshold: 1,
                  comparisonOperator: ComparisonOperator.LESS_THAN_THRESHOLD,
                  // No sweep at all is the failure this alarm exists for.
                  treatMissingDataOverride: TreatMissingData.BREACHING,
                  period: heartbeat,
                  alarmDescriptionOverride: `no expiry sweep completed in ${heartbeat.toHumanString()}: the sweeper stopped`,
                },
              },
            },
            this.emf('Expiries', 'Sum', {}, s),
          ],
        },
      ],
    });
  }
  /** Budget events: how far behind the stream the consumer is, and batches it gave up on. */
  private budgetEvents(props: ServiceMonitoringProps): void {
    const { budgetEvents, serviceName: s } = props;
    if (!budgetEvents) return;
    const { consumer, dlq } = budgetEvents;
    const maxAge = props.maxIteratorAge ?? Duration.minutes(5);
    this.facade.monitorCustom({
      humanReadableName: 'Budget events: stream consumer',
      alarmFriendlyName: 'BudgetEvents',
      metricGroups: [
        {
          title: 'Stream batches dropped to the DLQ',
          metrics: [
            {
              metric: dlq.metricApproximateNumberOfMessagesVisible({
                period: PERIOD,
                statistic: 'Maximum',
              }),
              alarmFriendlyName: 'Dropped',
              addAlarm: {
                Critical: {
                  ...atLeast(1),
                  treatMissingDataOverride: TreatMissingData.NOT_BREACHING,
                  alarmDescriptionOverride:
                    'stream batches the budget events consumer could not process went to its DLQ',
                },
              },
            },
          ],
        },
        {
          title: 'Events published, by type',
          metrics: [this.search('BudgetEvents', 'Type', MetricStatistic.SUM, s)],
        },
        {
          title: 'Webhook delivery attempts, by outcome',
          metrics: [this.search('WebhookDeliveries', 'Outcome', MetricStatistic.SUM, s)],
        },
        {
          title: 'Webhook delivery messages dead-lettered',
          metrics: [
            {
              metric: budgetEvents.deliveryDlq.metricApproximateNumberOfMessagesVisible({
                period: PERIOD,
                statistic: 'Maximum',
              }),
              alarmFriendlyName: 'DeliveriesDeadLettered',
              addAlarm: {
                Critical: {
                  ...atLeast(1),
                  treatMissingDataOverride: TreatMissingData.NOT_BREACHING,
                  alarmDescriptionOverride:
                    'webhook delivery messages the delivery function kept failing on (not receivers that fail: those are recorded FAILED) went to the delivery DLQ; their deliveries are still on the due index',
                },
              },
            },
          ],
        },
        {
          title: 'Delivery function errors',
          metrics: [budgetEvents.delivery.metricErrors({ period: PERIOD, statistic: 'Sum' })],
        },
        {
          title: 'Iterator age (ms, max)',
          metrics: [
            {
              metric: consumer.metric('IteratorAge', { period: PERIOD, statistic: 'Maximum' }),
              alarmFriendlyName: 'IteratorAge',
              addAlarm: {
                Critical: {
                  ...atLeast(maxAge.toMilliseconds()),
                  // An idle stream invokes nothing: no data is no lag.
                  treatMissingDataOverride: TreatMissingData.NOT_BREACHING,
                  alarmDescriptionOverride: `the budget events consumer is more than ${maxAge.toHumanString()} behind the table's stream: events reach the bus and webhooks late`,
                },
              },
            },
          ],
        },
        {
          title: 'Consumer errors',
          metrics: [consumer.metricErrors({ period: PERIOD, statistic: 'Sum' })],
        },
      ],
    });
  }
}
