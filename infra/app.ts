import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Annotations, App, Tags } from 'aws-cdk-lib';
import { ApiStack, type CustomDomain } from './api-stack.js';
import { DataStack } from './data-stack.js';

/**
 * The CDK app. Stacks are environment-agnostic (no `env`, no lookups), so `cdk synth` runs
 * offline with no AWS credentials; `cdk deploy` takes account and region from the CLI profile.
 *
 * Context (all optional, `-c key=value`; docs/deploy.md):
 *   stackPrefix            stack names `<prefix>Data` / `<prefix>Api` (default BudgetReservations)
 *   ephemeral=true         test stacks: table, key and logs deleted with the stacks
 *   adminApiKeySecretName  use this existing secret instead of generating one
 *   domainName + certificateArn [+ adminBasePath]   custom domain for both APIs
 *   alarmEmail             subscribe this address to the alarm topic
 *   reserveSweeperConcurrency=false   for accounts whose Lambda concurrency quota is below 101
 *   webhookUrls            comma-separated URLs budget events are also POSTed to (signed)
 *   tracing=false          no X-Ray tracing (on by default)
 *   metricsTenantDimension=true   business metrics also per tenant (off by default: cost)
 */
export function createStacks(app: App): { data: DataStack; api: ApiStack } {
  const context = (key: string): string | undefined => {
    const value: unknown = app.node.tryGetContext(key);
    return value === undefined || value === '' ? undefined : String(value);
  };
  const prefix = context('stackPrefix') ?? 'BudgetReservations';
  const ephemeral = context('ephemeral') === 'true';
  const domainName = context('domainName');
  const certificateArn = context('certificateArn');
  if (domainName && !certificateArn) {
    throw new Error('context domainName needs certificateArn (an ACM certificate in the region)');
  }
  const adminBasePath = context('adminBasePath');
  const domain: CustomDomain | undefined =
    domainName && certificateArn
      ? { domainName, certificateArn, ...(adminBasePath && { adminBasePath }) }
      : undefined;
  const adminApiKeySecretName = context('adminApiKeySecretName');
  const alarmEmail = context('alarmEmail');
  const webhookUrls = context('webhookUrls')
    ?.split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '');

  const data = new DataStack(app, `${prefix}Data`, {
    description: 'Budget reservation service: table and admin key',
    ephemeral,
    ...(adminApiKeySecretName && { adminApiKeySecretName }),
  });
  const api = new ApiStack(app, `${prefix}Api`, {
    description:
      'Budget reservation service: functions, HTTP APIs, sweeper, budget events, dashboard, alarms',
    table: data.table,
    adminApiKey: data.adminApiKey,
    cursorSecret: data.cursorSecret,
    ephemeral,
    ...(domain && { domain }),
    ...(alarmEmail && { alarmEmail }),
    reserveSweeperConcurrency: context('reserveSweeperConcurrency') !== 'false',
    ...(webhookUrls && { webhookUrls }),
    tracing: context('tracing') !== 'false',
    metricsTenantDimension: context('metricsTenantDimension') === 'true',
  });
  // Strong (export/import) references are what we want: CloudFormation then refuses to change
  // the table or secret an ApiStack still uses.
  Annotations.of(api).acknowledgeWarning(
    '@aws-cdk/core:crossStackReferencesDefaultStrong',
    'ApiStack must keep the table and the secret of DataStack from being removed under it',
  );
  Tags.of(app).add('service', 'budget-reservations');
  return { data, api };
}

// Run by `cdk synth` / `cdk deploy` (cdk.json); tests import createStacks instead.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  createStacks(new App());
}
