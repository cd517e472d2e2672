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
 *   domainName + certificateArn [+ adminBasePath]   custom domain for both APIs
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
  const domain = customDomain(context);
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
    ...(adminApiKeySecretName && { adminApiKeySecretName }),
  });
  const defaults: FunctionDefaults = {
    table: data.table,
    adminApiKey: data.adminApiKey,
    cursorSecret: data.cursorSecret,
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
  if (domain && runtime && admin) mapCustomDomain(domain, runtime, admin);

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
  return { data, routes: stacks, jobs, ...(monitoring && { monitoring }) };
}

function customDomain(context: (key: string) => string | undefined): CustomDomain | undefined {
  const domainName = context('domainName');
  const certificateArn = context('certificateArn');
  if (domainName && !certificateArn) {
    throw new Error('context domainName needs certificateArn (an ACM certificate in the region)');
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
