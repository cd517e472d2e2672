import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Duration, Tags, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { type Route, type RouteId, routeEntries, type Server } from '../functions/routes.js';
import {
  ApiStack,
  type CustomDomain,
  type FunctionDefaults,
  mapCustomDomain,
  type OwnedApi,
  pascal,
} from './api-stack.js';
import { DataStack } from './data-stack.js';
import { EdgeFirewallStack, type EdgeLimits } from './edge-firewall.js';
import { EdgeStack } from './edge-stack.js';
import { JobsStack } from './jobs-stack.js';
import { MonitoringStack } from './monitoring-stack.js';

/** Every stack of one deployment, in the order `cdk deploy --all` deploys them. */
export interface Stacks {
  readonly data: DataStack;
  /** The route stacks by their key: `admin`, `runtime`, then any a route table adds. */
  readonly routes: ReadonlyMap<string, ApiStack>;
  readonly jobs: JobsStack;
  /** @default - none with `-c monitoring=false` */
  readonly monitoring?: MonitoringStack;
  /** The web ACL (us-east-1) and the distribution. @default - none with `-c edge=false` */
  readonly edge?: { readonly firewall: EdgeFirewallStack; readonly distribution: EdgeStack };
}

/** Each server's own stack, which creates its HTTP API; the admin one first (see below). */
const SERVER_STACKS: readonly {
  readonly server: Server;
  readonly rps: number;
  readonly burst: number;
}[] = [
  { server: 'admin', rps: 20, burst: 50 },
  { server: 'runtime', rps: 500, burst: 1000 },
];

/**
 * The CDK app. Stacks are environment-agnostic (no `env`, no lookups), so `cdk synth` runs
 * offline with no AWS credentials; `cdk deploy` takes account and region from the CLI profile.
 * cdk-nag's AwsSolutions rules check every synth: a finding without an acknowledgement (with
 * its reason, next to the construct) fails it.
 *
 * Context (all optional, `-c key=value`; docs/deploy.md):
 *   stackPrefix            stack names `<prefix>Data`, `<prefix>AdminApi`, … (default BudgetReservations)
 *   ephemeral=true         test stacks: table, key and logs deleted with the stacks
 *   adminApiKeySecretName  use this existing secret instead of generating (and rotating) one
 *   adminKeyRotationDays   days between rotations of the generated admin key (default 30)
 *   domainName + certificateArn [+ adminBasePath]   custom domain for both APIs (on the
 *                          edge's distribution, the certificate in us-east-1; on API Gateway
 *                          with -c edge=false, the certificate in the stacks' region)
 *   edge=false             no CloudFront and WAF in front of the APIs (development); the
 *                          functions then check no origin header
 *   edgeKeyRatePerMinute   requests per minute per API key at the edge (default 3000)
 *   edgeSourceRatePerMinute   requests per minute per source address at the edge (default 6000)
 *   adminAllowList         comma-separated CIDR ranges the admin API accepts at the edge
 *   alarmEmail             subscribe this address to the alarm topic
 *   monitoring=false       no dashboard, alarms or alarm topic (the monitoring stack)
 *   reserveSweeperConcurrency=false   for accounts whose Lambda concurrency quota is below 101
 *   webhookUrls            comma-separated URLs given an operator subscription to every event
 *   tracing=false          no X-Ray tracing (on by default)
 *   metricsTenantDimension=true   business metrics also per tenant (off by default: cost)
 *
 * `routes` is the route table (tests pass a longer one to prove the headroom).
 */
export function createStacks(
  app: App,
  routes: readonly (readonly [RouteId, Route])[] = routeEntries(),
): Stacks {
  const context = (key: string): string | undefined => {
    const value: unknown = app.node.tryGetContext(key);
    return value === undefined || value === '' ? undefined : String(value);
  };
  const prefix = context('stackPrefix') ?? 'BudgetReservations';
  const ephemeral = context('ephemeral') === 'true';
  const tracing = context('tracing') !== 'false';
  const edgeOn = context('edge') !== 'false';
  const domain = customDomain(context, edgeOn);
  const adminApiKeySecretName = context('adminApiKeySecretName');
  const rotationDays = context('adminKeyRotationDays');
  if (rotationDays && !/^\d+$/.test(rotationDays)) {
    throw new Error('context adminKeyRotationDays must be a number of days (1 to 1000)');
  }
  const alarmEmail = context('alarmEmail');
  const webhookUrls = context('webhookUrls')
    ?.split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '');

  const data = new DataStack(app, `${prefix}Data`, {
    description: 'Budget reservation service: table, admin and cursor keys, budget events bus',
    ephemeral,
    originVerify: edgeOn,
    ...(adminApiKeySecretName && { adminApiKeySecretName }),
  });
  const defaults: FunctionDefaults = {
    table: data.table,
    adminApiKey: data.adminApiKey,
    cursorSecret: data.cursorSecret,
    ...(data.originVerify && { originVerify: data.originVerify }),
    ephemeral,
    tracing,
    metricsTenantDimension: context('metricsTenantDimension') === 'true',
    // The `service` of every log line and metric, and the name of the dashboard and alarms.
    serviceName: prefix,
  };

  // The background jobs first: the events routes send to its delivery queue and invoke its
  // delivery function (they depend on it, never the other way round).
  const jobs = new JobsStack(app, `${prefix}Jobs`, {
    ...defaults,
    description:
      'Budget reservation service: expiry sweeper, events consumer, webhook delivery, admin key rotation',
    eventBus: data.eventBus,
    webhookKey: data.webhookKey,
    reserveSweeperConcurrency: context('reserveSweeperConcurrency') !== 'false',
    ...(webhookUrls && { webhookUrls }),
    ...(data.generatedAdminApiKey && { adminApiKeySecret: data.generatedAdminApiKey }),
    ...(rotationDays && { adminKeyRotation: Duration.days(Number(rotationDays)) }),
  });
  const webhooks = {
    keyArn: data.webhookKey.keyArn,
    queue: jobs.deliveryQueue,
    deliveryFunction: jobs.webhookDelivery,
  };

  const byStack = new Map<string, [RouteId, Route][]>();
  for (const [id, route] of routes) {
    const key = route.stack ?? route.server;
    byStack.set(key, [...(byStack.get(key) ?? []), [id, route]]);
  }
  // The admin stack first: the runtime stack routes two of its functions on the admin API (the
  // console's mounts), so it imports that API's id, never the other way round.
  const stacks = new Map<string, ApiStack>();
  const apis: Partial<Record<Server, OwnedApi>> = {};
  for (const { server, rps, burst } of SERVER_STACKS) {
    const stack = new ApiStack(app, `${prefix}${pascal(server)}Api`, {
      ...defaults,
      description: `Budget reservation service: the ${server} HTTP API and one function per ${server} route`,
      routes: byStack.get(server) ?? [],
      owns: { server, throttle: { rateLimit: rps, burstLimit: burst } },
      apis: { ...(apis.admin && { admin: apis.admin.api }) },
    });
    if (stack.api) apis[server] = stack.api;
    stacks.set(server, stack);
  }
  for (const [key, entries] of byStack) {
    if (stacks.has(key)) continue;
    const stack = new ApiStack(app, `${prefix}${pascal(key)}Api`, {
      ...defaults,
      description: `Budget reservation service: the ${key} routes`,
      routes: entries,
      apis: { runtime: apis.runtime?.api, admin: apis.admin?.api },
      webhooks,
    });
    stacks.set(key, stack);
  }
  const runtime = stacks.get('runtime');
  const admin = stacks.get('admin');
  const edge =
    edgeOn && runtime?.api && admin?.api && data.originVerify
      ? edgeStacks(app, prefix, context, {
          runtimeApi: runtime.api.api,
          adminApi: admin.api.api,
          originVerifySecretArn: data.originVerify.secretId,
          ...(domain && { domain }),
        })
      : undefined;
  if (!edge && domain && runtime && admin) mapCustomDomain(domain, runtime, admin);

  const monitored = (server: Server) => {
    const api = apis[server];
    if (!api) throw new Error(`no ${server} API`);
    const functionStacks = [...byStack]
      .filter(([, entries]) => entries.some(([, r]) => r.server === server))
      .map(([key]) => stacks.get(key)?.stackName ?? key);
    return { api: api.api, accessLogs: api.logs, functionStacks };
  };
  const monitoring =
    context('monitoring') === 'false'
      ? undefined
      : new MonitoringStack(app, `${prefix}Monitoring`, {
          description: 'Budget reservation service: dashboard, alarms and their topic',
          serviceName: prefix,
          apis: { runtime: monitored('runtime'), admin: monitored('admin') },
          sweeper: jobs.sweeper,
          budgetEvents: {
            consumer: jobs.budgetEvents,
            dlq: jobs.budgetEventsDlq,
            delivery: jobs.webhookDelivery,
            deliveryDlq: jobs.deliveryDlq,
          },
          table: data.table,
          ...(alarmEmail && { alarmEmail }),
        });

  Tags.of(app).add('service', 'budget-reservations');
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { data, routes: stacks, jobs, ...(monitoring && { monitoring }), ...(edge && { edge }) };
}

/**
 * The edge: the web ACL in its own stack pinned to us-east-1 (where a CLOUDFRONT web ACL must
 * be), the distribution in the service's region, reading the ACL's ARN from an SSM parameter
 * at deploy time (docs/decisions.md § Edge).
 */
function edgeStacks(
  app: App,
  prefix: string,
  context: (key: string) => string | undefined,
  apis: Omit<ConstructorParameters<typeof EdgeStack>[2], 'webAclArnParameter' | 'adminBasePath'>,
): NonNullable<Stacks['edge']> {
  const perMinute = (key: string, fallback: number) => {
    const value = context(key) ?? String(fallback);
    // WAF's rate rules count from 10 to 2 billion requests per window.
    if (!/^\d+$/.test(value) || Number(value) < 10 || Number(value) > 2_000_000_000)
      throw new Error(`context ${key} must be a number of requests per minute (10 or more)`);
    return Number(value);
  };
  const adminAllowList = context('adminAllowList')
    ?.split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '');
  for (const cidr of adminAllowList ?? []) {
    if (!/^[\d.]+\/\d{1,2}$|^[\da-fA-F:]+\/\d{1,3}$/.test(cidr))
      throw new Error(`context adminAllowList: ${cidr} is not a CIDR range (e.g. 203.0.113.0/24)`);
  }
  const adminBasePath = apis.domain?.adminBasePath ?? context('adminBasePath') ?? 'admin';
  const limits: EdgeLimits = {
    perKeyPerMinute: perMinute('edgeKeyRatePerMinute', 3_000),
    perSourcePerMinute: perMinute('edgeSourceRatePerMinute', 6_000),
    adminBasePath,
    ...(adminAllowList && adminAllowList.length > 0 && { adminAllowList }),
  };
  const webAclArnParameter = `/${prefix}/edge/web-acl-arn`;
  const firewall = new EdgeFirewallStack(app, `${prefix}EdgeFirewall`, {
    description: 'Budget reservation service: the AWS WAF web ACL of the edge (us-east-1)',
    limits,
    webAclArnParameter,
  });
  const distribution = new EdgeStack(app, `${prefix}Edge`, {
    description: 'Budget reservation service: CloudFront in front of both HTTP APIs',
    ...apis,
    webAclArnParameter,
    adminBasePath,
  });
  distribution.addStackDependency(firewall);
  return { firewall, distribution };
}

function customDomain(
  context: (key: string) => string | undefined,
  edgeOn: boolean,
): CustomDomain | undefined {
  const domainName = context('domainName');
  const certificateArn = context('certificateArn');
  if (domainName && !certificateArn) {
    throw new Error(
      edgeOn
        ? 'context domainName needs certificateArn (an ACM certificate in us-east-1, for CloudFront)'
        : 'context domainName needs certificateArn (an ACM certificate in the region)',
    );
  }
  if (edgeOn && certificateArn && !certificateArn.includes(':us-east-1:')) {
    throw new Error('context certificateArn: CloudFront takes only ACM certificates in us-east-1');
  }
  const adminBasePath = context('adminBasePath');
  return domainName && certificateArn
    ? { domainName, certificateArn, ...(adminBasePath && { adminBasePath }) }
    : undefined;
}

// Run by `cdk synth` / `cdk deploy` (cdk.json); tests import createStacks instead.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  createStacks(new App());
}
