import {
  CfnOutput,
  Duration,
  RemovalPolicy,
  Stack,
  type StackProps,
  Validations,
} from 'aws-cdk-lib';
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
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import {
  acceptsAdminKey,
  countsRequests,
  placesOf,
  type Route,
  type RouteId,
  type Server,
} from '../functions/routes.js';
import { METRICS_NAMESPACE } from '../functions/telemetry/catalog.js';
import type { SecretRef } from './data-stack.js';
import { ServiceFunction } from './service-function.js';

export interface CustomDomain {
  /** e.g. budgets.example.com; point a CNAME / alias at the `DomainTarget` output. */
  readonly domainName: string;
  /** An ACM certificate for it, in the stack's region. */
  readonly certificateArn: string;
  /** Where the admin API lives under the domain; the runtime API has the root. @default 'admin' */
  readonly adminBasePath?: string;
}

/** What every function of the service shares: its table, secrets, logs and telemetry. */
export interface FunctionDefaults {
  readonly table: ITable;
  readonly adminApiKey: SecretRef;
  readonly cursorSecret: SecretRef;
  /**
   * The edge's origin-verify secret: every route's function checks it (http/origin.ts).
   * @default - none: the edge is off, nothing checks where a request came from
   */
  readonly originVerify?: SecretRef;
  /** Logs are deleted with the stack. @default false */
  readonly ephemeral?: boolean;
  /** Function and access logs. @default RetentionDays.ONE_MONTH */
  readonly logRetention?: RetentionDays;
  /** Lambda's active X-Ray tracing of every function. @default true */
  readonly tracing?: boolean;
  /**
   * Business metrics also per tenant (METRICS_TENANT_DIMENSION): one more custom metric per
   * tenant and metric, each billed. @default false
   */
  readonly metricsTenantDimension?: boolean;
  /** POWERTOOLS_SERVICE_NAME: the `service` of every log line and metric of the deployment. */
  readonly serviceName: string;
}

/** The webhook machinery routes may use (route table `webhooks`): the jobs stack's and the key. */
export interface WebhookResources {
  /** The data stack's key that seals secrets. */
  readonly keyArn: string;
  readonly queue: IQueue;
  readonly deliveryFunction: IFunction;
}

/** A server's HTTP API with its `$default` stage and access logs. */
export interface OwnedApi {
  readonly api: HttpApi;
  readonly stage: HttpStage;
  readonly logs: LogGroup;
}

export interface ApiStackProps extends StackProps, FunctionDefaults {
  /** The routes whose functions and API Gateway routes this stack holds. */
  readonly routes: readonly (readonly [RouteId, Route])[];
  /**
   * The server whose HTTP API (with its stage and access logs) this stack creates and
   * outputs the URL of. @default - none: its routes go on APIs other stacks own
   */
  readonly owns?: { readonly server: Server; readonly throttle: ThrottleSettings };
  /** The HTTP APIs of other stacks that its routes or their mounts are on. @default {} */
  readonly apis?: Partial<Record<Server, HttpApi>>;
  /** What routes with `webhooks` grants use. @default - none: no route may have them */
  readonly webhooks?: WebhookResources;
}

/** A route's sizing, from the route table's defaults. */
export const sizingOf = (r: Pick<Route, 'memoryMb' | 'timeoutSeconds'>) => ({
  memorySize: r.memoryMb ?? 512,
  timeout: Duration.seconds(r.timeoutSeconds ?? 10),
});

export const pascal = (id: string) => id.charAt(0).toUpperCase() + id.slice(1);

/** The environment every function gets: its table, log level and telemetry settings. */
export const commonEnvironment = (d: FunctionDefaults): Record<string, string> => ({
  TABLE_NAME: d.table.tableName,
  LOG_LEVEL: 'info',
  // The deployment's name is the `service` of its logs and metrics: two deployments in one
  // account never mix their metrics.
  POWERTOOLS_SERVICE_NAME: d.serviceName,
  POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
  ...(d.metricsTenantDimension && { METRICS_TENANT_DIMENSION: 'true' }),
});

/** What ServiceFunction takes from the defaults: logs and tracing. */
export const functionLogs = (d: FunctionDefaults) => ({
  logRetention: d.logRetention ?? RetentionDays.ONE_MONTH,
  logRemovalPolicy: d.ephemeral ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
  tracing: d.tracing ?? true,
});

/**
 * The console's files, built by esbuild into the function's asset beside its bundle (served
 * from there by functions/admin/console.ts): part of every synth, offline, no prior build.
 */
const consoleBuildCommands = (outputDir: string) => [
  `node --import tsx infra/build-console.ts --outdir "${outputDir}/console"`,
];

/**
 * Routes of the route table: one function each, wired to the HTTP API of its server (and to
 * the APIs of its mounts); the stack that owns a server's HTTP API creates it, with its
 * `$default` stage, throttling and JSON access logs, and outputs its URL. Construct ids come
 * from route ids (CreateReservation, CreateReservationRoute, …), so logical ids stay put when
 * code moves.
 */
export class ApiStack extends Stack {
  /** The HTTP API this stack owns, if any. */
  readonly api?: OwnedApi;
  readonly functions: ReadonlyMap<RouteId, ServiceFunction>;

  constructor(scope: Construct, id: string, props: ApiStackProps) {
    super(scope, id, props);
    const logs = functionLogs(props);
    const apis: Partial<Record<Server, HttpApi>> = { ...props.apis };
    if (props.owns) {
      this.api = this.httpApi(props.owns.server, props.owns.throttle, logs, props.serviceName);
      apis[props.owns.server] = this.api.api;
      new CfnOutput(this, props.owns.server === 'runtime' ? 'RuntimeUrl' : 'AdminUrl', {
        value: this.api.api.apiEndpoint,
        description: `Base URL of the ${props.owns.server} server`,
      });
    }

    const functions = new Map<RouteId, ServiceFunction>();
    for (const [routeId, route] of props.routes) {
      const name = pascal(routeId);
      const adminAuth = acceptsAdminKey(route);
      const fn = new ServiceFunction(this, name, {
        ...logs,
        ...sizingOf(route),
        entry: route.entry,
        route: { id: routeId, route },
        description: `${route.server} ${route.method} ${route.path}`,
        ...(route.assets === 'console' && { afterBundling: consoleBuildCommands }),
        environment: {
          ...commonEnvironment(props),
          // Only the functions that check X-Admin-API-Key learn where the key is, or may read it.
          ...(adminAuth && { ADMIN_API_KEY_SECRET_ID: props.adminApiKey.secretId }),
          ...(route.paginates && { CURSOR_SECRET_ID: props.cursorSecret.secretId }),
          ...(props.originVerify && { ORIGIN_VERIFY_SECRET_ID: props.originVerify.secretId }),
          ...webhookEnvironment(route, props.webhooks),
        },
      });
      fn.grantTable(props.table, route.table);
      if (countsRequests(route)) fn.grantRateCounters(props.table);
      if (adminAuth) fn.grantSecretRead(props.adminApiKey.policyArn);
      if (route.paginates) fn.grantSecretRead(props.cursorSecret.policyArn);
      if (props.originVerify) fn.grantSecretRead(props.originVerify.policyArn);
      grantWebhooks(fn, route, props.webhooks);
      // The route's own path, then its mounts: more routes to the same function (the first
      // keeps the construct ids it always had, so its logical ids do not move).
      placesOf(route).forEach(({ server, path }, i) => {
        const api = apis[server];
        if (!api) throw new Error(`${routeId}: no HTTP API of the ${server} server in ${id}`);
        const suffix = i === 0 ? '' : `Mount${i}`;
        const httpRoute = new HttpRoute(this, `${name}Route${suffix}`, {
          httpApi: api,
          routeKey:
            path === '$default'
              ? HttpRouteKey.DEFAULT
              : HttpRouteKey.with(path, HttpMethod[route.method]),
          integration: new HttpLambdaIntegration(`${name}Integration${suffix}`, fn),
        });
        Validations.of(httpRoute).acknowledge({
          id: 'AwsSolutions-APIG4',
          reason:
            route.auth.kind === 'none'
              ? 'a public route (health, OpenAPI document, console page, not found): it reads nothing a caller could not'
              : 'authorized by the function before any work: tenant API keys (hashed in the table, per-key permissions, revocable) and the admin key (Secrets Manager, rotated), functions/http/auth.ts; an API Gateway authorizer would add an invocation per request and still need the table for permissions',
        });
      });
      functions.set(routeId, fn);
    }
    this.functions = functions;
  }

  private httpApi(
    server: Server,
    throttle: ThrottleSettings,
    logs: { logRetention: RetentionDays; logRemovalPolicy: RemovalPolicy },
    serviceName: string,
  ): OwnedApi {
    const name = pascal(server);
    const api = new HttpApi(this, `${name}Api`, {
      apiName: `${this.stackName}-${server}`,
      createDefaultStage: false,
    });
    const accessLogs = new LogGroup(this, `${name}AccessLogs`, {
      retention: logs.logRetention,
      removalPolicy: logs.logRemovalPolicy,
    });
    const stage = new HttpStage(this, `${name}Stage`, {
      httpApi: api,
      stageName: '$default',
      autoDeploy: true,
      throttle,
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            // Constants, so a metric filter can count 429s per deployment and API (monitoring.ts).
            service: serviceName,
            api: server,
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
    return { api, stage, logs: accessLogs };
  }
}

/** Where a route's webhook grants point: the key, the queue, the delivery function. */
function webhookEnvironment(route: Route, w: WebhookResources | undefined): Record<string, string> {
  const uses = route.webhooks ?? [];
  if (uses.length === 0) return {};
  if (!w) throw new Error(`${route.entry}: uses webhooks, and the stack was given none`);
  return {
    ...(uses.includes('seal') && { WEBHOOK_KMS_KEY_ID: w.keyArn }),
    ...(uses.includes('enqueue') && { WEBHOOK_QUEUE_URL: w.queue.queueUrl }),
    ...(uses.includes('probe') && { WEBHOOK_DELIVERY_FUNCTION: w.deliveryFunction.functionName }),
  };
}

/** Exactly what the route table says: Encrypt (never Decrypt), SendMessage, one Invoke. */
function grantWebhooks(fn: ServiceFunction, route: Route, w: WebhookResources | undefined): void {
  const uses = route.webhooks ?? [];
  if (!w || uses.length === 0) return;
  if (uses.includes('seal')) fn.grantSealing(w.keyArn, 'kms:Encrypt');
  if (uses.includes('enqueue')) w.queue.grantSendMessages(fn);
  if (uses.includes('probe')) fn.grantInvokeOf(w.deliveryFunction.functionArn);
}

/**
 * Both APIs on one custom domain: the runtime API at its root, the admin API under
 * `adminBasePath`. The domain lives in the admin API's stack, which deploys first (the runtime
 * stack mounts two of its routes on the admin API); each stack maps its own API and outputs its
 * URL on the domain.
 */
export function mapCustomDomain(domain: CustomDomain, runtime: ApiStack, admin: ApiStack): void {
  if (!runtime.api || !admin.api) throw new Error('both API stacks must own their HTTP API');
  const adminBasePath = domain.adminBasePath ?? 'admin';
  const domainName = new DomainName(admin, 'Domain', {
    domainName: domain.domainName,
    certificate: Certificate.fromCertificateArn(admin, 'Certificate', domain.certificateArn),
  });
  new ApiMapping(runtime, 'RuntimeMapping', {
    api: runtime.api.api,
    stage: runtime.api.stage,
    domainName,
  });
  new ApiMapping(admin, 'AdminMapping', {
    api: admin.api.api,
    stage: admin.api.stage,
    domainName,
    apiMappingKey: adminBasePath,
  });
  new CfnOutput(admin, 'DomainTarget', {
    value: domainName.regionalDomainName,
    description: `CNAME (or alias) target for ${domain.domainName}`,
  });
  setOutput(runtime, 'RuntimeUrl', `https://${domain.domainName}`);
  setOutput(admin, 'AdminUrl', `https://${domain.domainName}/${adminBasePath}`);
}

function setOutput(stack: Stack, id: string, value: string): void {
  const output = stack.node.findChild(id) as CfnOutput;
  output.value = value;
}
