import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  ApiMapping,
  DomainName,
  HttpApi,
  HttpMethod,
  HttpRoute,
  HttpRouteKey,
  HttpStage,
  LogGroupLogDestination,
  type ThrottleSettings,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { EventBus, Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { FilterCriteria, FilterRule, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import {
  acceptsAdminKey,
  budgetEventsConsumer,
  placesOf,
  type Route,
  type RouteId,
  routeEntries,
  type Server,
  sweeper,
} from '../functions/routes.js';
import { EVENT_ITEM_TYPES } from '../functions/store/table.js';
import { METRICS_NAMESPACE } from '../functions/telemetry/catalog.js';
import type { SecretRef } from './data-stack.js';
import { ServiceMonitoring } from './monitoring.js';
import { ServiceFunction } from './service-function.js';

export interface CustomDomain {
  /** e.g. budgets.example.com; point a CNAME / alias at the `DomainTarget` output. */
  readonly domainName: string;
  /** An ACM certificate for it, in the stack's region. */
  readonly certificateArn: string;
  /** Where the admin API lives under the domain; the runtime API has the root. @default 'admin' */
  readonly adminBasePath?: string;
}

export interface ApiStackProps extends StackProps {
  readonly table: ITable;
  readonly adminApiKey: SecretRef;
  readonly cursorSecret: SecretRef;
  /** Logs are deleted with the stack. @default false */
  readonly ephemeral?: boolean;
  /** @default - the execute-api endpoints only */
  readonly domain?: CustomDomain;
  /** Subscribed to the alarm topic. @default - no subscription */
  readonly alarmEmail?: string;
  /** Default route throttling of the runtime API. @default 500 rps, burst 1000 */
  readonly runtimeThrottle?: ThrottleSettings;
  /** Default route throttling of the admin API. @default 20 rps, burst 50 */
  readonly adminThrottle?: ThrottleSettings;
  /** Function and access logs. @default RetentionDays.ONE_MONTH */
  readonly logRetention?: RetentionDays;
  /** EXPIRY_SWEEP_INTERVAL_MS of the sweeper. @default Duration.seconds(5) */
  readonly sweepInterval?: Duration;
  /**
   * Reserve concurrency 1 for the sweeper. Lambda keeps 100 of an account's concurrency
   * unreserved, so accounts still at the new-account quota of 10 must set this to false.
   * @default true
   */
  readonly reserveSweeperConcurrency?: boolean;
  /** X-Ray tracing of every function, DynamoDB calls included. @default true */
  readonly tracing?: boolean;
  /**
   * Business metrics also per tenant (METRICS_TENANT_DIMENSION): one more custom metric per
   * tenant and metric, each billed. @default false
   */
  readonly metricsTenantDimension?: boolean;
  /**
   * Webhook URLs the budget events consumer also POSTs every event to, signed with a secret the
   * stack generates (output `WebhookSecretId`). The bus gets every event regardless.
   * @default - none: events go to the bus only
   */
  readonly webhookUrls?: readonly string[];
}

/**
 * The console's files, built by esbuild into the function's asset beside its bundle (served
 * from there by functions/admin/console.ts): part of every synth, offline, no prior build.
 */
const consoleBuildCommands = (outputDir: string) => [
  `node --import tsx infra/build-console.ts --outdir "${outputDir}/console"`,
];

/** A route's sizing, from the route table's defaults. */
const sizingOf = (r: Pick<Route, 'memoryMb' | 'timeoutSeconds'>) => ({
  memorySize: r.memoryMb ?? 512,
  timeout: Duration.seconds(r.timeoutSeconds ?? 10),
});

const pascal = (id: string) => id.charAt(0).toUpperCase() + id.slice(1);

/** The stateless half: one function per route, the two HTTP APIs, the sweeper, the dashboard and alarms. */
export class ApiStack extends Stack {
  readonly apis: Record<Server, { readonly api: HttpApi; readonly stage: HttpStage }>;
  readonly functions: Record<RouteId | 'sweeper' | 'budgetEvents', ServiceFunction>;
  /** Where budget events go: route them with ordinary EventBridge rules (README). */
  readonly eventBus: EventBus;
  /** Stream batches that never went through (their metadata: shard and sequence numbers). */
  readonly budgetEventsDlq: Queue;
  readonly monitoring: ServiceMonitoring;

  constructor(scope: Construct, id: string, props: ApiStackProps) {
    super(scope, id, props);
    const logRetention = props.logRetention ?? RetentionDays.ONE_MONTH;
    const logRemovalPolicy = props.ephemeral ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;
    const common = {
      logRetention,
      logRemovalPolicy,
      tracing: props.tracing ?? true,
      environment: {
        TABLE_NAME: props.table.tableName,
        LOG_LEVEL: 'info',
        // The stack's name is the `service` of its logs, metrics and traces: two deployments
        // in one account never mix their metrics.
        POWERTOOLS_SERVICE_NAME: this.stackName,
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
        ...(props.metricsTenantDimension && { METRICS_TENANT_DIMENSION: 'true' }),
      },
    };

    this.apis = {
      runtime: this.httpApi(
        'Runtime',
        props.runtimeThrottle ?? { rateLimit: 500, burstLimit: 1000 },
        logRetention,
        logRemovalPolicy,
      ),
      admin: this.httpApi(
        'Admin',
        props.adminThrottle ?? { rateLimit: 20, burstLimit: 50 },
        logRetention,
        logRemovalPolicy,
      ),
    };

    const functions: Partial<Record<RouteId | 'sweeper' | 'budgetEvents', ServiceFunction>> = {};
    for (const [routeId, route] of routeEntries()) {
      const name = pascal(routeId);
      const adminAuth = acceptsAdminKey(route);
      const fn = new ServiceFunction(this, name, {
        ...common,
        ...sizingOf(route),
        entry: route.entry,
        description: `${route.server} ${route.method} ${route.path}`,
        ...(route.assets === 'console' && { afterBundling: consoleBuildCommands }),
        environment: {
          ...common.environment,
          // Only the functions that check X-Admin-API-Key learn where the key is, or may read it.
          ...(adminAuth && { ADMIN_API_KEY_SECRET_ID: props.adminApiKey.secretId }),
          ...(route.paginates && { CURSOR_SECRET_ID: props.cursorSecret.secretId }),
        },
      });
      fn.grantTable(props.table, route.table);
      if (adminAuth) fn.grantSecretRead(props.adminApiKey.policyArn);
      if (route.paginates) fn.grantSecretRead(props.cursorSecret.policyArn);
      // The route's own path, then its mounts: more routes to the same function (the first
      // keeps the construct ids it always had, so its logical ids do not move).
      placesOf(route).forEach(({ server, path }, i) => {
        const suffix = i === 0 ? '' : `Mount${i}`;
        new HttpRoute(this, `${name}Route${suffix}`, {
          httpApi: this.apis[server].api,
          routeKey:
            path === '$default'
              ? HttpRouteKey.DEFAULT
              : HttpRouteKey.with(path, HttpMethod[route.method]),
          integration: new HttpLambdaIntegration(`${name}Integration${suffix}`, fn),
        });
      });
      functions[routeId] = fn;
    }
    functions.sweeper = this.sweeper(props, common);
    this.eventBus = new EventBus(this, 'BudgetEvents', {
      description: 'Budget events: thresholds, exhaustion, debt, over limit, expiries, refusals',
    });
    this.budgetEventsDlq = new Queue(this, 'BudgetEventsDlq', {
      retentionPeriod: Duration.days(14),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    functions.budgetEvents = this.budgetEvents(props, common);
    this.functions = functions as Record<RouteId | 'sweeper' | 'budgetEvents', ServiceFunction>;

    const urls = props.domain ? this.customDomain(props.domain) : undefined;
    new CfnOutput(this, 'RuntimeUrl', {
      value: urls?.runtime ?? this.apis.runtime.api.apiEndpoint,
      description: 'Base URL of the runtime server',
    });
    new CfnOutput(this, 'AdminUrl', {
      value: urls?.admin ?? this.apis.admin.api.apiEndpoint,
      description: 'Base URL of the admin server',
    });
    this.monitoring = this.monitor(props);
  }

  private httpApi(
    name: string,
    throttle: ThrottleSettings,
    retention: RetentionDays,
    removalPolicy: RemovalPolicy,
  ) {
    const api = new HttpApi(this, `${name}Api`, {
      apiName: `${this.stackName}-${name.toLowerCase()}`,
      createDefaultStage: false,
    });
    const accessLogs = new LogGroup(this, `${name}AccessLogs`, { retention, removalPolicy });
    const stage = new HttpStage(this, `${name}Stage`, {
      httpApi: api,
      stageName: '$default',
      autoDeploy: true,
      throttle,
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            ip: '$context.identity.sourceIp',
            time: '$context.requestTime',
            method: '$context.httpMethod',
            path: '$context.path',
            routeKey: '$context.routeKey',
            status: '$context.status',
            responseLength: '$context.responseLength',
            latencyMs: '$context.responseLatency',
            integrationLatencyMs: '$context.integrationLatency',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });
    return { api, stage };
  }

  private sweeper(
    props: ApiStackProps,
    common: {
      environment: Record<string, string>;
      logRetention: RetentionDays;
      tracing: boolean;
    },
  ): ServiceFunction {
    const interval = props.sweepInterval ?? Duration.seconds(5);
    // One minute: the handler stops sweeping ~5 s before it, just before the next tick starts.
    const fn = new ServiceFunction(this, 'Sweeper', {
      ...common,
      entry: sweeper.entry,
      description: 'expires reservations past their grace period',
      ...sizingOf(sweeper),
      // At most one sweeper at a time. A second one would still be safe (every expiry is a
      // transaction conditioned on ACTIVE-and-due), only wasteful.
      ...(props.reserveSweeperConcurrency !== false && { reservedConcurrentExecutions: 1 }),
      environment: {
        ...common.environment,
        EXPIRY_SWEEP_INTERVAL_MS: String(interval.toMilliseconds()),
      },
    });
    fn.grantTable(props.table, sweeper.table);
    // A crashed or throttled sweep is not retried: nothing is lost, since whatever it did not
    // expire is still in the due index for the next minute's sweep.
    fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.minutes(1) });
    new Rule(this, 'SweeperSchedule', {
      description: 'runs the reservation expiry sweeper every minute',
      schedule: Schedule.rate(Duration.minutes(1)),
      targets: [new LambdaFunction(fn, { retryAttempts: 2, maxEventAge: Duration.minutes(1) })],
    });
    return fn;
  }

  /**
   * The table's stream → the budget events consumer → the bus (and webhooks, if configured).
   * Only items that can mean an event invoke it (filters on the stream records), in batches;
   * a failing batch is bisected, the consumer reports the record to retry from, and what still
   * fails after 10 tries (or a day) is dropped to the DLQ, so one poison record never holds
   * the stream.
   */
  private budgetEvents(
    props: ApiStackProps,
    common: {
      environment: Record<string, string>;
      logRetention: RetentionDays;
      tracing: boolean;
    },
  ): ServiceFunction {
    const webhookUrls = props.webhookUrls ?? [];
    const webhookSecret =
      webhookUrls.length > 0
        ? new Secret(this, 'WebhookSecret', {
            description: 'Signs the webhook deliveries of budget events (X-Cycles-Signature)',
            generateSecretString: { passwordLength: 48, excludePunctuation: true },
            removalPolicy: props.ephemeral ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
          })
        : undefined;
    const fn = new ServiceFunction(this, 'BudgetEventsConsumer', {
      ...common,
      entry: budgetEventsConsumer.entry,
      description: 'derives budget events from the table stream and puts them on the bus',
      ...sizingOf(budgetEventsConsumer),
      environment: {
        ...common.environment,
        EVENT_BUS_NAME: this.eventBus.eventBusName,
        ...(webhookSecret && {
          WEBHOOK_URLS: webhookUrls.join(','),
          WEBHOOK_SECRET_ID: webhookSecret.secretArn,
        }),
      },
    });
    fn.grantTable(props.table, budgetEventsConsumer.table);
    fn.grantStreamRead(props.table);
    this.eventBus.grantPutEventsTo(fn);
    if (webhookSecret) fn.grantSecretRead(webhookSecret.secretArn);
    const streamArn = props.table.tableStreamArn;
    if (!streamArn) throw new Error('budget events need the table stream (DataStack)');
    const type = (...types: string[]) => ({ type: { S: FilterRule.or(...types) } });
    fn.addEventSourceMapping('TableStream', {
      eventSourceArn: streamArn,
      startingPosition: StartingPosition.TRIM_HORIZON,
      batchSize: 100,
      maxBatchingWindow: Duration.seconds(1),
      bisectBatchOnError: true,
      reportBatchItemFailures: true,
      retryAttempts: 10,
      maxRecordAge: Duration.days(1),
      onFailure: new SqsDlq(this.budgetEventsDlq),
      filters: [
        // Ledger writes (usage, debt), expiries (ACTIVE → EXPIRED), refusal records.
        FilterCriteria.filter({
          eventName: FilterRule.isEqual('MODIFY'),
          dynamodb: { NewImage: type(...EVENT_ITEM_TYPES.ledgers) },
        }),
        FilterCriteria.filter({
          eventName: FilterRule.isEqual('MODIFY'),
          dynamodb: {
            NewImage: { ...type(EVENT_ITEM_TYPES.reservation), status: { S: ['EXPIRED'] } },
          },
        }),
        FilterCriteria.filter({
          eventName: FilterRule.isEqual('INSERT'),
          dynamodb: { NewImage: type(EVENT_ITEM_TYPES.refusal) },
        }),
      ],
    });
    new CfnOutput(this, 'EventBusName', {
      value: this.eventBus.eventBusName,
      description: 'The bus budget events are put on (source budget-reservations)',
    });
    if (webhookSecret) {
      new CfnOutput(this, 'WebhookSecretId', {
        value: webhookSecret.secretArn,
        description: 'aws secretsmanager get-secret-value --secret-id <this>: the webhook key',
      });
    }
    return fn;
  }

  private customDomain(domain: CustomDomain) {
    const adminBasePath = domain.adminBasePath ?? 'admin';
    const domainName = new DomainName(this, 'Domain', {
      domainName: domain.domainName,
      certificate: Certificate.fromCertificateArn(this, 'Certificate', domain.certificateArn),
    });
    new ApiMapping(this, 'RuntimeMapping', {
      api: this.apis.runtime.api,
      stage: this.apis.runtime.stage,
      domainName,
    });
    new ApiMapping(this, 'AdminMapping', {
      api: this.apis.admin.api,
      stage: this.apis.admin.stage,
      domainName,
      apiMappingKey: adminBasePath,
    });
    new CfnOutput(this, 'DomainTarget', {
      value: domainName.regionalDomainName,
      description: `CNAME (or alias) target for ${domain.domainName}`,
    });
    return {
      runtime: `https://${domain.domainName}`,
      admin: `https://${domain.domainName}/${adminBasePath}`,
    };
  }

  /** The dashboard and every alarm, all notifying the `Alarms` topic (infra/monitoring.ts). */
  private monitor(props: ApiStackProps): ServiceMonitoring {
    const topic = new Topic(this, 'Alarms', { displayName: `${this.stackName} alarms` });
    if (props.alarmEmail) topic.addSubscription(new EmailSubscription(props.alarmEmail));
    return new ServiceMonitoring(this, 'Monitoring', {
      serviceName: this.stackName,
      apis: { runtime: this.apis.runtime.api, admin: this.apis.admin.api },
      routeFunctions: routeEntries().map(([id, route]) => ({
        id,
        server: route.server,
        fn: this.functions[id],
      })),
      sweeper: this.functions.sweeper,
      budgetEvents: { consumer: this.functions.budgetEvents, dlq: this.budgetEventsDlq },
      table: props.table,
      topic,
    });
  }
}
