import { readFileSync } from 'node:fs';
import { App, type CfnElement, type Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { acceptsAdminKey, placesOf, type RouteId, routeEntries } from '../../functions/routes.js';
import { tableDefinition } from '../../functions/store/table.js';
import { METRICS, METRICS_NAMESPACE } from '../../functions/telemetry/catalog.js';
import { createStacks } from '../../infra/app.js';
import { READ_ACTIONS } from '../../infra/service-function.js';

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;
type Statement = { Action: string | string[]; Resource: unknown; Effect: string };

const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as {
  context: Record<string, unknown>;
};

/**
 * Both stacks, in-process, with cdk.json's feature flags as `cdk synth` applies them. Without
 * esbuild bundling and CloudFormation validation (`npm run synth` does both) it takes seconds.
 */
function synth(context: Record<string, unknown> = {}) {
  const app = new App({
    context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [], ...context },
    builtinCloudFormationValidation: false,
  });
  const { data, api } = createStacks(app);
  return {
    dataStack: data,
    apiStack: api,
    data: Template.fromStack(data),
    api: Template.fromStack(api),
  };
}

const logicalId = (stack: Stack, element: { node: { defaultChild?: unknown } }) =>
  stack.getLogicalId(element.node.defaultChild as CfnElement);

const pascal = (id: string) => id.charAt(0).toUpperCase() + id.slice(1);

const actionsOf = (statement: Statement) =>
  Array.isArray(statement.Action) ? statement.Action : [statement.Action];

/** Every statement of the policies attached to the role of function `fnId`. */
function statementsOf(resources: Resources, fnId: string): Statement[] {
  const role = (resources[fnId]?.Properties.Role as { 'Fn::GetAtt': [string] } | undefined)?.[
    'Fn::GetAtt'
  ][0];
  return Object.values(resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy')
    .filter((r) => ((r.Properties.Roles ?? []) as { Ref: string }[]).some((x) => x.Ref === role))
    .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Statement[] }).Statement ?? []);
}

describe('CDK app', () => {
  let synthesized: ReturnType<typeof synth>;
  let resources: Resources;
  const fnIds = {} as Record<RouteId | 'sweeper' | 'budgetEvents', string>;
  beforeAll(() => {
    synthesized = synth();
    resources = synthesized.api.toJSON().Resources as Resources;
    for (const [id, fn] of Object.entries(synthesized.apiStack.functions)) {
      fnIds[id as RouteId] = logicalId(synthesized.apiStack, fn);
    }
  });

  describe('functions', () => {
    it('has one function per route plus the sweeper and the budget events consumer, each its own', () => {
      const count = routeEntries().length + 2;

      synthesized.api.resourceCountIs('AWS::Lambda::Function', count);
      expect(new Set(Object.values(fnIds)).size).toBe(count);
    });

    it('runs every function on Node.js 22, arm64, JSON logs, its own log group with retention', () => {
      const functions = synthesized.api.findResources('AWS::Lambda::Function');

      for (const fn of Object.values(functions)) {
        expect(fn.Properties).toMatchObject({
          Runtime: 'nodejs22.x',
          Architectures: ['arm64'],
          Handler: 'index.handler',
          LoggingConfig: { LogFormat: 'JSON', LogGroup: { Ref: expect.any(String) } },
          Environment: { Variables: { NODE_OPTIONS: '--enable-source-maps' } },
          MemorySize: expect.any(Number),
          Timeout: expect.any(Number),
        });
        const logGroup = resources[fn.Properties.LoggingConfig.LogGroup.Ref];
        expect(logGroup?.Properties?.RetentionInDays).toBe(30);
      }
    });

    it('wires every route, and each of its mounts, to its own function on the API of its server', () => {
      const api = synthesized.apiStack;
      let places = 0;

      for (const [id, route] of routeEntries()) {
        for (const { server, path } of placesOf(route)) {
          const apiId = logicalId(api, api.apis[server].api);
          const routeKey = path === '$default' ? '$default' : `${route.method} ${path}`;
          const wired = Object.values(
            synthesized.api.findResources('AWS::ApiGatewayV2::Route', {
              Properties: { RouteKey: routeKey, ApiId: { Ref: apiId } },
            }),
          );
          expect(wired, `${id} at ${server} ${routeKey}`).toHaveLength(1);
          const integrationId = (wired[0]?.Properties.Target['Fn::Join'][1][1].Ref ?? '') as string;
          const integration = resources[integrationId]?.Properties;
          expect(integration?.IntegrationUri, id).toEqual({ 'Fn::GetAtt': [fnIds[id], 'Arn'] });
          expect(integration?.PayloadFormatVersion, id).toBe('2.0');
          places++;
        }
      }
      synthesized.api.resourceCountIs('AWS::ApiGatewayV2::Route', places);
    });

    it('mounts the console and the two runtime routes it calls on the admin API', () => {
      const adminApi = logicalId(synthesized.apiStack, synthesized.apiStack.apis.admin.api);
      const adminRoutes = Object.values(
        synthesized.api.findResources('AWS::ApiGatewayV2::Route', {
          Properties: { ApiId: { Ref: adminApi } },
        }),
      ).map((r) => r.Properties.RouteKey as string);

      expect(adminRoutes).toEqual(
        expect.arrayContaining([
          'GET /console',
          'GET /console/{proxy+}',
          'GET /v1/reservations',
          'POST /v1/reservations/{reservation_id}/release',
        ]),
      );
      // The console's function reads nothing: no table, no secret (only its traces are written).
      const actions = statementsOf(resources, fnIds.console).flatMap(actionsOf);
      expect(actions.filter((a) => !a.startsWith('xray:'))).toEqual([]);
    });
  });

  describe('least privilege', () => {
    it('gives no function a write action unless its route writes', () => {
      for (const [id, route] of routeEntries()) {
        const actions = statementsOf(resources, fnIds[id]).flatMap(actionsOf);
        const writes = actions.filter(
          (a) =>
            a.startsWith('dynamodb:') && ![...READ_ACTIONS, 'dynamodb:DescribeTable'].includes(a),
        );

        if (route.table.items !== 'write') expect(writes, id).toEqual([]);
        else
          expect(writes, id).toEqual(
            expect.arrayContaining(['dynamodb:PutItem', 'dynamodb:UpdateItem']),
          );
      }
    });

    it('lets each function query exactly the indexes its route table entry names', () => {
      const indexResources = (fnId: string) =>
        JSON.stringify(statementsOf(resources, fnId).map((s) => s.Resource)).match(
          /\/index\/\w+/g,
        ) ?? [];

      for (const [id, route] of routeEntries()) {
        expect(indexResources(fnIds[id]).sort(), id).toEqual(
          (route.table.indexes ?? []).map((name) => `/index/${name}`).sort(),
        );
      }
      expect(indexResources(fnIds.listReservations)).toHaveLength(7);
      expect(indexResources(fnIds.createReservation)).toEqual(['/index/dueForExpiry']);
      expect(indexResources(fnIds.sweeper)).toEqual(['/index/dueForExpiry']);
    });

    it('has no wildcard action and no wildcard resource in any policy, but for X-Ray', () => {
      const statements = [synthesized.data, synthesized.api]
        .flatMap((template) => Object.values(template.findResources('AWS::IAM::Policy')))
        .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Statement[]);
      // X-Ray's two write actions have no resource-level permissions: '*' is the only resource.
      const xray = (s: Statement) => actionsOf(s).every((a) => a.startsWith('xray:'));

      expect(statements.length).toBeGreaterThan(0);
      for (const statement of statements) {
        expect(actionsOf(statement).filter((a) => a.includes('*'))).toEqual([]);
        if (xray(statement)) {
          expect(actionsOf(statement).sort()).toEqual([
            'xray:PutTelemetryRecords',
            'xray:PutTraceSegments',
          ]);
          expect(statement.Resource).toBe('*');
        } else expect(JSON.stringify(statement.Resource)).not.toContain('*');
      }
    });

    it('lets only the routes that accept the admin key, or sign cursors, read a secret', () => {
      for (const [id, route] of routeEntries()) {
        // Statements with the same action may be merged: count the secrets they name.
        const reads = statementsOf(resources, fnIds[id])
          .filter((s) => actionsOf(s).includes('secretsmanager:GetSecretValue'))
          .flatMap((s) => [s.Resource].flat());

        const expected = Number(acceptsAdminKey(route)) + Number(route.paginates === true);
        expect(reads.length, id).toBe(expected);
      }
    });
  });

  describe('table', () => {
    it('has on-demand billing, PITR, deletion protection, retain, TTL and exactly the store indexes', () => {
      const tables = synthesized.data.findResources('AWS::DynamoDB::Table');
      const [table] = Object.values(tables);

      expect(Object.keys(tables)).toHaveLength(1);
      expect(table?.DeletionPolicy).toBe('Retain');
      expect(table?.Properties).toMatchObject({
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        DeletionProtectionEnabled: true,
        TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
      });
      expect(table?.Properties.TableName).toBeUndefined();
      expect(
        ((table?.Properties.GlobalSecondaryIndexes ?? []) as { IndexName: string }[]).map(
          (i) => i.IndexName,
        ),
      ).toEqual(tableDefinition.indexes.map((i) => i.name));
    });

    it('switches to destroy and no deletion protection with -c ephemeral=true', () => {
      const { data, dataStack } = synth({ ephemeral: 'true' });

      data.hasResource('AWS::DynamoDB::Table', {
        DeletionPolicy: 'Delete',
        Properties: Match.objectLike({ DeletionProtectionEnabled: false }),
      });
      expect(dataStack.terminationProtection).toBe(false);
    });

    it('protects the data stack from termination by default', () => {
      expect(synthesized.dataStack.terminationProtection).toBe(true);
    });
  });

  describe('sweeper', () => {
    it('is scheduled every minute, one at a time, not retried', () => {
      synthesized.api.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: 'rate(1 minute)',
        State: 'ENABLED',
        Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [fnIds.sweeper, 'Arn'] } })],
      });
      expect(resources[fnIds.sweeper]?.Properties).toMatchObject({
        ReservedConcurrentExecutions: 1,
        Timeout: 60,
        Environment: { Variables: { EXPIRY_SWEEP_INTERVAL_MS: '5000' } },
      });
      synthesized.api.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
        FunctionName: { Ref: fnIds.sweeper },
        MaximumRetryAttempts: 0,
      });
    });

    it('can run unreserved where the account quota leaves no concurrency to reserve', () => {
      const { api, apiStack } = synth({ reserveSweeperConcurrency: 'false' });
      const sweeperId = logicalId(apiStack, apiStack.functions.sweeper);

      expect(
        api.toJSON().Resources[sweeperId].Properties.ReservedConcurrentExecutions,
      ).toBeUndefined();
    });
  });

  describe('budget events', () => {
    it('enables the table stream with old and new images', () => {
      synthesized.data.hasResourceProperties('AWS::DynamoDB::Table', {
        StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
      });
    });

    it('feeds the stream to the consumer in batches, bisected, partial failures, a DLQ', () => {
      const [queueId] = Object.keys(synthesized.api.findResources('AWS::SQS::Queue'));
      const mappings = Object.values(
        synthesized.api.findResources('AWS::Lambda::EventSourceMapping'),
      );

      expect(mappings).toHaveLength(1);
      expect(mappings[0]?.Properties).toMatchObject({
        FunctionName: { Ref: fnIds.budgetEvents },
        EventSourceArn: { 'Fn::ImportValue': expect.stringMatching(/StreamArn/) },
        StartingPosition: 'TRIM_HORIZON',
        BatchSize: 100,
        BisectBatchOnFunctionError: true,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        MaximumRetryAttempts: 10,
        DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queueId, 'Arn'] } } },
      });
      const filters = (mappings[0]?.Properties.FilterCriteria.Filters ?? []) as {
        Pattern: string;
      }[];
      const patterns = filters.map((f) => JSON.parse(f.Pattern));
      expect(patterns).toEqual([
        {
          eventName: ['MODIFY'],
          dynamodb: { NewImage: { type: { S: ['ledger', 'ledger-shard', 'ledger-period'] } } },
        },
        {
          eventName: ['MODIFY'],
          dynamodb: { NewImage: { type: { S: ['reservation'] }, status: { S: ['EXPIRED'] } } },
        },
        { eventName: ['INSERT'], dynamodb: { NewImage: { type: { S: ['refusal'] } } } },
      ]);
    });

    it('lets the consumer read the stream and the table, put on its bus, and write nothing else', () => {
      const [busId] = Object.keys(synthesized.api.findResources('AWS::Events::EventBus'));
      const statements = statementsOf(resources, fnIds.budgetEvents);
      const actions = statements.flatMap(actionsOf);
      const resourcesOf = (action: string) =>
        statements.filter((s) => actionsOf(s).includes(action)).map((s) => s.Resource);

      expect(actions.filter((a) => a.startsWith('dynamodb:')).sort()).toEqual(
        [
          ...READ_ACTIONS,
          'dynamodb:DescribeStream',
          'dynamodb:GetRecords',
          'dynamodb:GetShardIterator',
          'dynamodb:ListStreams',
        ].sort(),
      );
      expect(resourcesOf('dynamodb:GetRecords')).toEqual([
        { 'Fn::ImportValue': expect.stringMatching(/StreamArn/) },
      ]);
      expect(resourcesOf('events:PutEvents')).toEqual([{ 'Fn::GetAtt': [busId, 'Arn'] }]);
      expect(actions.filter((a) => a.startsWith('sqs:'))).toContain('sqs:SendMessage');
      expect(resources[fnIds.budgetEvents]?.Properties).toMatchObject({
        Timeout: 120,
        Environment: { Variables: { EVENT_BUS_NAME: { Ref: busId } } },
      });
      synthesized.api.hasOutput('EventBusName', {});
    });

    it('signs webhooks set by context with a generated secret only the consumer reads', () => {
      const { api, apiStack } = synth({ webhookUrls: 'https://hooks.example.com/a' });
      const consumer = logicalId(apiStack, apiStack.functions.budgetEvents);
      const all = api.toJSON().Resources as Resources;
      const [secretId] = Object.keys(api.findResources('AWS::SecretsManager::Secret'));

      expect(all[consumer]?.Properties).toMatchObject({
        Environment: {
          Variables: {
            WEBHOOK_URLS: 'https://hooks.example.com/a',
            WEBHOOK_SECRET_ID: { Ref: secretId },
          },
        },
      });
      const readers = Object.keys(all).filter((id) =>
        statementsOf(all, id).some(
          (s) => JSON.stringify(s.Resource) === JSON.stringify({ Ref: secretId }),
        ),
      );
      expect(readers).toEqual([consumer]);
      api.hasOutput('WebhookSecretId', {});
    });

    it('alarms when stream batches are dropped to the DLQ', () => {
      const [queueId] = Object.keys(synthesized.api.findResources('AWS::SQS::Queue'));

      synthesized.api.hasResourceProperties('AWS::CloudWatch::Alarm', {
        AlarmName: 'BudgetReservationsApi-BudgetEvents-Dropped-Critical',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId, 'QueueName'] } }],
        Threshold: 1,
      });
    });
  });

  describe('admin key', () => {
    it('is a generated secret, referenced by id, never a plaintext value', () => {
      const text = JSON.stringify([synthesized.data.toJSON(), synthesized.api.toJSON()]);

      synthesized.data.hasResourceProperties('AWS::SecretsManager::Secret', {
        GenerateSecretString: Match.objectLike({ PasswordLength: 48 }),
      });
      expect(text).not.toContain('"SecretString"');
      expect(text).not.toMatch(/"ADMIN_API_KEY"\s*:/);
      expect(text).not.toContain('change-me');
      for (const fn of Object.values(synthesized.api.findResources('AWS::Lambda::Function'))) {
        expect(Object.keys(fn.Properties.Environment.Variables)).not.toContain('ADMIN_API_KEY');
      }
    });

    it('can name an existing secret instead, granted by name pattern', () => {
      const { api } = synth({ adminApiKeySecretName: 'budgets/admin-key' });

      api.hasResourceProperties('AWS::Lambda::Function', {
        Environment: {
          Variables: Match.objectLike({ ADMIN_API_KEY_SECRET_ID: 'budgets/admin-key' }),
        },
      });
      expect(JSON.stringify(api.toJSON())).toContain(':secret:budgets/admin-key-??????');
    });
  });

  describe('HTTP APIs', () => {
    it('gives each API its own $default stage with throttling and access logs', () => {
      const stages = Object.values(synthesized.api.findResources('AWS::ApiGatewayV2::Stage'));

      expect(stages).toHaveLength(2);
      for (const stage of stages) {
        expect(stage.Properties).toMatchObject({
          StageName: '$default',
          AutoDeploy: true,
          DefaultRouteSettings: {
            ThrottlingRateLimit: expect.any(Number),
            ThrottlingBurstLimit: expect.any(Number),
          },
          AccessLogSettings: {
            DestinationArn: expect.anything(),
            Format: expect.stringContaining('$context.status'),
          },
        });
      }
    });

    it('outputs both base URLs', () => {
      synthesized.api.hasOutput('RuntimeUrl', {});
      synthesized.api.hasOutput('AdminUrl', {});
    });

    it('maps both APIs on a custom domain set by context, admin under /admin', () => {
      const { api } = synth({
        domainName: 'budgets.example.com',
        certificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/abc',
      });

      api.resourceCountIs('AWS::ApiGatewayV2::DomainName', 1);
      api.resourceCountIs('AWS::ApiGatewayV2::ApiMapping', 2);
      api.hasResourceProperties('AWS::ApiGatewayV2::ApiMapping', { ApiMappingKey: 'admin' });
      api.hasOutput('AdminUrl', { Value: 'https://budgets.example.com/admin' });
    });
  });

  describe('observability', () => {
    const alarms = () =>
      Object.values(synthesized.api.findResources('AWS::CloudWatch::Alarm')).map(
        (a) => a.Properties as Record<string, unknown>,
      );
    const alarmNamed = (suffix: string) =>
      alarms().find((a) => a.AlarmName === `BudgetReservationsApi-${suffix}-Critical`);
    /** The one metric an alarm watches, whether inline or as its only metric query. */
    const watched = (alarm: Record<string, unknown> | undefined) => {
      const query = (alarm?.Metrics as { MetricStat?: Record<string, unknown> }[] | undefined)?.[0]
        ?.MetricStat;
      const metric = (query?.Metric ?? alarm) as Record<string, unknown> | undefined;
      return {
        namespace: metric?.Namespace,
        name: metric?.MetricName,
        dimensions: metric?.Dimensions,
        stat: query?.Stat ?? alarm?.Statistic,
      };
    };

    it('traces every function with X-Ray, the Powertools tracer told so, unless -c tracing=false', () => {
      const { api } = synth({ tracing: 'false', metricsTenantDimension: 'true' });
      const on = Object.values(synthesized.api.findResources('AWS::Lambda::Function'));
      const off = Object.values(api.findResources('AWS::Lambda::Function'));

      for (const fn of on) {
        expect(fn.Properties.TracingConfig).toEqual({ Mode: 'Active' });
        expect(fn.Properties.Environment.Variables.POWERTOOLS_TRACE_ENABLED).toBe('true');
      }
      for (const fn of off) {
        expect(fn.Properties.TracingConfig).toBeUndefined();
        expect(fn.Properties.Environment.Variables).toMatchObject({
          POWERTOOLS_TRACE_ENABLED: 'false',
          METRICS_TENANT_DIMENSION: 'true',
        });
      }
      expect(JSON.stringify(api.toJSON())).not.toContain('xray:');
    });

    it('names the metrics namespace and the stack as service, with no tenant dimension by default', () => {
      for (const fn of Object.values(synthesized.api.findResources('AWS::Lambda::Function'))) {
        expect(fn.Properties.Environment.Variables).toMatchObject({
          POWERTOOLS_SERVICE_NAME: 'BudgetReservationsApi',
          POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
        });
        expect(fn.Properties.Environment.Variables).not.toHaveProperty('METRICS_TENANT_DIMENSION');
      }
    });

    it('has one dashboard: both APIs, every EMF metric of the catalog, DynamoDB and the sweeper', () => {
      const dashboards = Object.values(synthesized.api.findResources('AWS::CloudWatch::Dashboard'));
      const body = JSON.stringify(dashboards[0]?.Properties.DashboardBody);

      expect(dashboards).toHaveLength(1);
      expect(dashboards[0]?.Properties.DashboardName).toBe('BudgetReservationsApi');
      for (const name of Object.keys(METRICS)) expect(body, name).toContain(name);
      expect(body).toContain(METRICS_NAMESPACE);
      for (const apiMetric of ['\\"Count\\"', '\\"4xx\\"', '\\"5xx\\"', 'p50', 'p99'])
        expect(body, apiMetric).toContain(apiMetric);
      for (const [id] of routeEntries()) expect(body, id).toContain(`\\"label\\":\\"${id}\\"`);
      expect(body).toContain('TransactionConflict');
      expect(body).toContain('\\"type\\":\\"alarm\\"');
    });

    it('keeps the alarms it had: 5xx share of both APIs, throttles of every route, table throttles, sweeper errors', () => {
      for (const server of ['RuntimeApi', 'AdminApi']) {
        expect(alarmNamed(`${server}-5xxRate`), server).toMatchObject({
          ComparisonOperator: 'GreaterThanOrEqualToThreshold',
          Threshold: 1,
          Metrics: expect.arrayContaining([
            expect.objectContaining({ Expression: 'IF(requests > 0, 100 * errors / requests, 0)' }),
          ]),
        });
      }
      for (const [id, route] of routeEntries()) {
        const api = route.server === 'runtime' ? 'RuntimeApi' : 'AdminApi';
        expect(watched(alarmNamed(`${api}-${pascal(id)}Throttles`)), id).toEqual({
          namespace: 'AWS/Lambda',
          name: 'Throttles',
          dimensions: [{ Name: 'FunctionName', Value: { Ref: fnIds[id] } }],
          stat: 'Sum',
        });
      }
      expect(alarmNamed('Table-Throttles')).toBeDefined();
      expect(alarmNamed('Sweeper-Fault-Count')).toMatchObject({
        ComparisonOperator: 'GreaterThanThreshold',
        Threshold: 0,
      });
    });

    it('alarms when the sweeper stops (heartbeat) or falls behind (lag)', () => {
      const heartbeat = alarmNamed('Sweeper-Heartbeat');
      const lag = alarmNamed('Sweeper-Lag');
      const service = [{ Name: 'service', Value: 'BudgetReservationsApi' }];

      expect(watched(heartbeat)).toEqual({
        namespace: METRICS_NAMESPACE,
        name: 'Sweeps',
        dimensions: service,
        stat: 'Sum',
      });
      // No sweep at all is no data: missing data breaches.
      expect(heartbeat).toMatchObject({
        ComparisonOperator: 'LessThanThreshold',
        Threshold: 1,
        TreatMissingData: 'breaching',
      });
      expect(watched(lag)).toEqual({
        namespace: METRICS_NAMESPACE,
        name: 'SweepLag',
        dimensions: service,
        stat: 'Maximum',
      });
      expect(lag).toMatchObject({
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        Threshold: 180_000,
      });
    });

    it('sends every alarm to the alarm topic', () => {
      const [topic] = Object.keys(synthesized.api.findResources('AWS::SNS::Topic'));

      expect(alarms().length).toBe(routeEntries().length + 7);
      for (const alarm of alarms()) expect(alarm.AlarmActions).toEqual([{ Ref: topic }]);
    });
  });

  it('keeps the same resource types and counts (update deliberately when the stack changes)', () => {
    const counts = (template: Template) => {
      const result: Record<string, number> = {};
      for (const r of Object.values(template.toJSON().Resources as Resources)) {
        result[r.Type] = (result[r.Type] ?? 0) + 1;
      }
      return Object.fromEntries(Object.entries(result).sort(([a], [b]) => a.localeCompare(b)));
    };

    expect({ data: counts(synthesized.data), api: counts(synthesized.api) }).toMatchInlineSnapshot(`
      {
        "api": {
          "AWS::ApiGatewayV2::Api": 2,
          "AWS::ApiGatewayV2::Integration": 41,
          "AWS::ApiGatewayV2::Route": 41,
          "AWS::ApiGatewayV2::Stage": 2,
          "AWS::CloudWatch::Alarm": 45,
          "AWS::CloudWatch::Dashboard": 1,
          "AWS::Events::EventBus": 1,
          "AWS::Events::Rule": 1,
          "AWS::IAM::Policy": 40,
          "AWS::IAM::Role": 40,
          "AWS::Lambda::EventInvokeConfig": 1,
          "AWS::Lambda::EventSourceMapping": 1,
          "AWS::Lambda::Function": 40,
          "AWS::Lambda::Permission": 42,
          "AWS::Logs::LogGroup": 42,
          "AWS::SNS::Topic": 1,
          "AWS::SQS::Queue": 1,
          "AWS::SQS::QueuePolicy": 1,
        },
        "data": {
          "AWS::DynamoDB::Table": 1,
          "AWS::SecretsManager::Secret": 2,
        },
      }
    `);
  });
});
