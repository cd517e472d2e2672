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
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import {
  type CustomMetric,
  DefaultDashboardFactory,
  LatencyType,
  MetricStatistic,
  MonitoringFacade,
  SnsAlarmActionStrategy,
} from 'cdk-monitoring-constructs';
import { Construct } from 'constructs';
import type { RouteId, Server } from '../functions/routes.js';
import { METRICS_NAMESPACE, type MetricName } from '../functions/telemetry/catalog.js';

export interface ServiceMonitoringProps {
  /** The `service` dimension of the functions' EMF metrics (their POWERTOOLS_SERVICE_NAME). */
  readonly serviceName: string;
  readonly apis: Readonly<Record<Server, HttpApi>>;
  /** Each route's function, with the server it answers on. */
  readonly routeFunctions: readonly { id: RouteId; server: Server; fn: IFunction }[];
  readonly sweeper: IFunction;
  /** The budget events consumer and the DLQ of its stream mapping. @default - not watched */
  readonly budgetEvents?: { readonly consumer: IFunction; readonly dlq: IQueue };
  readonly table: ITable;
  /** Every alarm notifies it. */
  readonly topic: ITopic;
  /** The heartbeat fires when no sweep completed for this long. @default Duration.minutes(5) */
  readonly sweeperHeartbeat?: Duration;
  /** SweeperLag fires when a due reservation waited longer than this. @default Duration.minutes(3) */
  readonly maxSweepLag?: Duration;
}

const PERIOD = Duration.minutes(5);
const pascal = (id: string) => id.charAt(0).toUpperCase() + id.slice(1);
const atLeast = (threshold: number) => ({
  threshold,
  comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
});

/**
 * The service's one CloudWatch dashboard and its alarms, built with cdk-monitoring-constructs:
 * alarm status first, then per API (requests, latency p50/p99, 4xx/5xx, 5xx share, Lambda
 * throttles), the service's own EMF metrics (decisions, refusals, settlements, latency per
 * route), DynamoDB (throttles, conflicts, retries) and the sweeper (lag, heartbeat, errors).
 * Every alarm is named `<stack>-<subject>-<what>-Critical` and notifies the alarm topic.
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
  ) {
    return {
      searchQuery: `MetricName="${name}"`,
      // An undefined value puts the dimension in the search schema without fixing its value.
      dimensionsMap: { service: serviceName, [dimension]: undefined as unknown as string },
      statistic,
      label: `\${PROP('Dim.${dimension}')}`,
    };
  }

  private api(server: Server, props: ServiceMonitoringProps): void {
    const api = props.apis[server];
    const name = `${pascal(server)}Api`;
    this.facade.monitorApiGatewayV2HttpApi({
      api,
      apiStage: '$default',
      humanReadableName: `${pascal(server)} API`,
      alarmFriendlyName: name,
      latencyTypesToRender: [LatencyType.P50, LatencyType.P99],
    });
    const requests = api.metricCount({ period: PERIOD, statistic: 'Sum' });
    const errorShare = new MathExpression({
      expression: 'IF(requests > 0, 100 * errors / requests, 0)',
      usingMetrics: {
        errors: api.metricServerError({ period: PERIOD, statistic: 'Sum' }),
        requests,
      },
      period: PERIOD,
      label: '5xx % of requests',
    });
    const functions = props.routeFunctions.filter((r) => r.server === server);
    // A throttled function answers 503 through API Gateway: the account's concurrency is spent.
    // Stage throttling (the API's own rate limit) answers 429 and shows in 4xx above.
    const throttles: CustomMetric[] = functions.map(({ id, fn }) => ({
      metric: fn.metricThrottles({ period: PERIOD, statistic: 'Sum', label: id }),
      alarmFriendlyName: `${pascal(id)}Throttles`,
      addAlarm: {
        Critical: {
          ...atLeast(1),
          treatMissingDataOverride: TreatMissingData.NOT_BREACHING,
          alarmDescriptionOverride: `${id} was throttled`,
        },
      },
    }));
    this.facade.monitorCustom({
      humanReadableName: `${pascal(server)} API: 5xx share and Lambda throttles`,
      alarmFriendlyName: name,
      metricGroups: [
        {
          title: '5xx % of requests',
          metrics: [
            {
              metric: errorShare,
              alarmFriendlyName: '5xxRate',
              addAlarm: {
                Critical: {
                  ...atLeast(1),
                  treatMissingDataOverride: TreatMissingData.NOT_BREACHING,
                  alarmDescriptionOverride: `more than 1% of ${server} API requests answered 5xx over 5 minutes`,
                },
              },
            },
          ],
        },
        { title: 'Lambda throttles by route', metrics: throttles },
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
          title: 'Settlements',
          metrics: (['Commits', 'Releases', 'Expiries'] as const).map((m) =>
            this.emf(m, 'Sum', {}, s),
          ),
        },
        {
          title: 'Overage charged, by unit',
          metrics: [this.search('OverageCharged', 'Unit', sum, s)],
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
              label: '503: contention outlasted retries',
            }),
            this.emf('BusyAnswers', 'Sum', { Reason: 'THROTTLED' }, s).with({
              label: '503: throttling outlasted retries',
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
  private budgetEvents({ budgetEvents, serviceName: s }: ServiceMonitoringProps): void {
    if (!budgetEvents) return;
    const { consumer, dlq } = budgetEvents;
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
          title: 'Webhook deliveries dropped',
          metrics: [this.emf('WebhookDeliveriesDropped', 'Sum', {}, s)],
        },
        {
          title: 'Iterator age (ms, max) and errors',
          metrics: [
            consumer.metric('IteratorAge', { period: PERIOD, statistic: 'Maximum' }),
            consumer.metricErrors({ period: PERIOD, statistic: 'Sum' }),
          ],
        },
      ],
    });
  }
}
