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
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Construct } from 'constructs';
import {
  acceptsAdminKey,
  placesOf,
  type Route,
  type RouteId,
  routeEntries,
  type Server,
  sweeper,
} from '../functions/routes.js';
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
  readonly functions: Record<RouteId | 'sweeper', ServiceFunction>;
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

    const functions: Partial<Record<RouteId | 'sweeper', ServiceFunction>> = {};
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
    this.functions = functions as Record<RouteId | 'sweeper', ServiceFunction>;

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
      table: props.table,
      topic,
    });
  }
}
