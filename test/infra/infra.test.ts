import { Validations } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  acceptsAdminKey,
  countsRequests,
  placesOf,
  type Route,
  type RouteId,
  routeEntries,
} from '../../functions/routes.js';
import { tableDefinition } from '../../functions/store/table.js';
import { METRICS, METRICS_NAMESPACE } from '../../functions/telemetry/catalog.js';
import { READ_ACTIONS, WRITE_ACTIONS } from '../../infra/service-function.js';
import {
  actionsOf,
  logicalId,
  type Resources,
  resourceCounts,
  STACK_LIMITS,
  type Statement,
  type Synthesized,
  sectionsOf,
  serviceFunctions,
  statementsOf,
  synth,
} from '../helpers/synth.js';

describe('CDK app', () => {
  let s: Synthesized;
  beforeAll(() => {
    s = synth();
  });
  const routeStack = (key: string) => {
    const stack = s.stacks.routes.get(key);
    if (!stack) throw new Error(`no ${key} stack`);
    return stack;
  };

  describe('stacks', () => {
    it('splits the app by what changes together, deployed in this order', () => {
      expect(s.all.map((stack) => stack.stackName)).toEqual([
        'BudgetReservationsData',
        'BudgetReservationsJobs',
        'BudgetReservationsAdminApi',
        'BudgetReservationsRuntimeApi',
        // Our settlement extensions' routes (charges, refunds, estimate accuracy).
        'BudgetReservationsSettlementApi',
        // Our governance routes (policies, bulk actions, overview), then events and webhooks.
        'BudgetReservationsGovernanceApi',
        'BudgetReservationsEventsApi',
        'BudgetReservationsMonitoring',
        // The edge: its web ACL in us-east-1, the distribution beside the APIs.
        'BudgetReservationsEdgeFirewall',
        'BudgetReservationsEdge',
      ]);
      const dependsOn = (name: string) =>
        s.all
          .find((stack) => stack.stackName === name)
          ?.dependencies.map((d) => d.stackName)
          .sort();
      expect(dependsOn('BudgetReservationsData')).toEqual([]);
      expect(dependsOn('BudgetReservationsAdminApi')).toEqual(['BudgetReservationsData']);
      expect(dependsOn('BudgetReservationsRuntimeApi')).toEqual([
        'BudgetReservationsAdminApi',
        'BudgetReservationsData',
      ]);
      // The governance routes (issue 27), a family of admin routes in a stack of their own.
      expect(dependsOn('BudgetReservationsGovernanceApi')).toEqual([
        'BudgetReservationsAdminApi',
        'BudgetReservationsData',
      ]);
      expect(dependsOn('BudgetReservationsJobs')).toEqual(['BudgetReservationsData']);
      // The events routes send to the jobs stack's queue and invoke its delivery function.
      expect(dependsOn('BudgetReservationsEventsApi')).toEqual([
        'BudgetReservationsAdminApi',
        'BudgetReservationsData',
        'BudgetReservationsJobs',
      ]);
      expect(dependsOn('BudgetReservationsEdgeFirewall')).toEqual([]);
      expect(dependsOn('BudgetReservationsEdge')).toEqual([
        'BudgetReservationsAdminApi',
        'BudgetReservationsData',
        'BudgetReservationsEdgeFirewall',
        'BudgetReservationsRuntimeApi',
      ]);
      expect(dependsOn('BudgetReservationsMonitoring')).toEqual([
        'BudgetReservationsAdminApi',
        'BudgetReservationsData',
        'BudgetReservationsJobs',
        'BudgetReservationsRuntimeApi',
      ]);
    });

    it('keeps every stack at or under 60 % of CloudFormation’s per-stack limits', () => {
      for (const stack of s.all) {
        const sections = sectionsOf(s.template(stack));
        for (const [section, limit] of Object.entries(STACK_LIMITS)) {
          expect(
            sections[section as keyof typeof STACK_LIMITS],
            `${stack.stackName} ${section}`,
          ).toBeLessThanOrEqual(0.6 * limit);
        }
      }
    });

    it('has room for the next 40 routes: 25 admin routes in a stack of their family, 15 runtime', () => {
      const copy = (from: RouteId, n: number, extra: Partial<Route>) =>
        Array.from({ length: n }, (_, i): [RouteId, Route] => [
          `${from}Next${i}` as RouteId,
          { ...routeEntries().find(([id]) => id === from)?.[1], ...extra } as Route,
        ]).map(([id, r], i) => [id, { ...r, path: `${r.path}/next-${i}` }] as [RouteId, Route]);
      const grown = synth({}, [
        ...routeEntries(),
        ...copy('createReservation', 15, {}),
        ...copy('createBudget', 25, { stack: 'adminEvents' }),
      ]);

      expect(grown.stacks.routes.get('adminEvents')?.stackName).toBe(
        'BudgetReservationsAdminEventsApi',
      );
      for (const stack of grown.all) {
        const { Resources } = sectionsOf(grown.template(stack));
        expect(Resources, stack.stackName).toBeLessThanOrEqual(0.6 * STACK_LIMITS.Resources);
      }
    });

    it('keeps the table’s logical id and every export the single-stack version imported', () => {
      // What a deployment from before the split imports from the data stack: deploying the
      // new stacks beside it must not remove any (docs/deploy.md § Moving from one API stack).
      const exported = Object.values(
        (s.template(s.stacks.data).toJSON().Outputs ?? {}) as Record<
          string,
          { Export?: { Name: string } }
        >,
      ).map((o) => o.Export?.Name);

      expect(logicalId(s.stacks.data, s.stacks.data.table)).toBe('TableCD117FA1');
      expect(exported).toEqual(
        expect.arrayContaining([
          'BudgetReservationsData:ExportsOutputFnGetAttTableCD117FA1ArnE2C8C204',
          'BudgetReservationsData:ExportsOutputRefTableCD117FA1D18A8047',
          'BudgetReservationsData:ExportsOutputRefAdminApiKey4943A9E84F114B68',
          'BudgetReservationsData:ExportsOutputRefCursorSecretABAE1358CA2C79A5',
          'BudgetReservationsData:ExportsOutputFnGetAttTableCD117FA1StreamArnB270E65B',
        ]),
      );
    });

    it('deploys without the dashboard, alarms and their topic with -c monitoring=false', () => {
      const bare = synth({ monitoring: 'false' });

      expect(bare.stacks.monitoring).toBeUndefined();
      for (const stack of bare.all) {
        const types = Object.keys(resourceCounts(bare.template(stack)));
        expect(types).not.toContain('AWS::CloudWatch::Alarm');
        expect(types).not.toContain('AWS::CloudWatch::Dashboard');
      }
    });
  });

  describe('functions', () => {
    it('has one function per route in its stack, the background ones in the jobs stack', () => {
      const functionsIn = (key: string) => resourceCounts(s.template(routeStack(key)));
      const count = (key: string) =>
        routeEntries().filter(([, r]) => (r.stack ?? r.server) === key).length;

      expect([...s.stacks.routes.keys()].sort()).toEqual([
        'admin',
        'events',
        'governance',
        'runtime',
        'settlement',
      ]);
      for (const key of s.stacks.routes.keys()) {
        expect(functionsIn(key)['AWS::Lambda::Function'], key).toBe(count(key));
      }
      s.template(s.stacks.jobs).resourceCountIs('AWS::Lambda::Function', 5);
      s.template(s.stacks.data).resourceCountIs('AWS::Lambda::Function', 0);
    });

    it('runs every function on Node.js 22, arm64, CommonJS, JSON logs to its own log group', () => {
      for (const stack of s.all) {
        const resources = s.template(stack).toJSON().Resources as Resources;
        for (const fn of serviceFunctions(resources)) {
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
      }
    });

    it('wires every route, and each of its mounts, to its own function on the API of its server', () => {
      const apiRef = (server: 'runtime' | 'admin', from: string) => {
        const owner = routeStack(server);
        const id = logicalId(owner, owner.api?.api as never);
        return from === owner.stackName
          ? { Ref: id }
          : { 'Fn::ImportValue': expect.stringContaining(id) };
      };
      let places = 0;

      for (const [id, route] of routeEntries()) {
        const { stack, resources, logicalId: fnId } = s.fn(id);
        for (const { server, path } of placesOf(route)) {
          const routeKey = path === '$default' ? '$default' : `${route.method} ${path}`;
          const wired = Object.values(resources).filter(
            (r) =>
              r.Type === 'AWS::ApiGatewayV2::Route' &&
              r.Properties.RouteKey === routeKey &&
              expect
                .objectContaining(apiRef(server, stack.stackName))
                .asymmetricMatch(r.Properties.ApiId),
          );
          expect(wired, `${id} at ${server} ${routeKey}`).toHaveLength(1);
          const integrationId = (wired[0]?.Properties.Target['Fn::Join'][1][1].Ref ?? '') as string;
          const integration = resources[integrationId]?.Properties;
          expect(integration?.IntegrationUri, id).toEqual({ 'Fn::GetAtt': [fnId, 'Arn'] });
          expect(integration?.PayloadFormatVersion, id).toBe('2.0');
          places++;
        }
      }
      const routes = (key: string) =>
        resourceCounts(s.template(routeStack(key)))['AWS::ApiGatewayV2::Route'] ?? 0;
      expect([...s.stacks.routes.keys()].reduce((n, key) => n + routes(key), 0)).toBe(places);
    });

    it('mounts the console and the two runtime routes it calls on the admin API', () => {
      const adminApi = { 'Fn::ImportValue': expect.stringContaining('AdminApi') };
      const mounted = Object.values(
        s.template(routeStack('runtime')).findResources('AWS::ApiGatewayV2::Route'),
      )
        .filter((r) =>
          adminApi['Fn::ImportValue'].asymmetricMatch(r.Properties.ApiId['Fn::ImportValue']),
        )
        .map((r) => r.Properties.RouteKey as string);
      const consoleRoutes = Object.values(
        s.template(routeStack('admin')).findResources('AWS::ApiGatewayV2::Route'),
      ).map((r) => r.Properties.RouteKey as string);

      expect(mounted.sort()).toEqual([
        'GET /v1/reservations',
        'POST /v1/reservations/{reservation_id}/release',
      ]);
      expect(consoleRoutes).toEqual(
        expect.arrayContaining(['GET /console', 'GET /console/{proxy+}']),
      );
      // The console's function reads nothing but the edge's origin-verify secret: no table (it
      // only writes its logs).
      const { resources, logicalId: fnId } = s.fn('console');
      const statements = statementsOf(resources, fnId).filter(
        (st) => !actionsOf(st).some((a) => a.startsWith('xray:') || a.startsWith('logs:')),
      );
      expect(statements.flatMap(actionsOf)).toEqual(['secretsmanager:GetSecretValue']);
      expect(JSON.stringify(statements.map((st) => st.Resource))).toContain('OriginVerifySecret');
    });
  });

  describe('least privilege', () => {
    it('gives no function a write action unless its route writes', () => {
      for (const [id, route] of routeEntries()) {
        const { resources, logicalId: fnId } = s.fn(id);
        // The rate limiter's counters are granted apart, on their partitions alone (below).
        const actions = statementsOf(resources, fnId)
          .filter((st) => !JSON.stringify(st.Condition ?? {}).includes('RATE#'))
          .flatMap(actionsOf);
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

    it('lets a tenant route count requests on the rate counters’ partitions alone, and a settling one not at all', () => {
      for (const [id, route] of routeEntries()) {
        const { resources, logicalId: fnId } = s.fn(id);
        const conditioned = statementsOf(resources, fnId).filter(
          (st) => st.Condition && actionsOf(st).some((a) => a.startsWith('dynamodb:')),
        );
        if (!countsRequests(route)) {
          expect(conditioned, id).toEqual([]);
          continue;
        }
        expect(
          conditioned.map((st) => [actionsOf(st), st.Condition]),
          id,
        ).toEqual([
          [
            ['dynamodb:GetItem'],
            { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['TENANT#*'] } },
          ],
          [
            ['dynamodb:UpdateItem'],
            { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['RATE#*'] } },
          ],
        ]);
      }
    });

    it('lets each function query exactly the indexes its route table entry names', () => {
      const indexResources = (id: RouteId | 'sweeper') => {
        const { resources, logicalId: fnId } = s.fn(id);
        return (
          JSON.stringify(statementsOf(resources, fnId).map((st) => st.Resource)).match(
            /\/index\/\w+/g,
          ) ?? []
        );
      };

      for (const [id, route] of routeEntries()) {
        expect(indexResources(id).sort(), id).toEqual(
          (route.table.indexes ?? []).map((name) => `/index/${name}`).sort(),
        );
      }
      // The listing indexes: status (a tenant's whole listing too) and the five subject levels.
      expect(indexResources('listReservations')).toHaveLength(6);
      expect(indexResources('createReservation')).toEqual(['/index/dueForExpiry']);
      expect(indexResources('sweeper')).toEqual(['/index/dueForExpiry']);
    });

    it('lets a function write its own log group only, with no managed policy', () => {
      for (const [id] of routeEntries()) {
        const { resources, logicalId: fnId } = s.fn(id);
        const logs = statementsOf(resources, fnId).filter((st) =>
          actionsOf(st).some((a) => a.startsWith('logs:')),
        );
        const logGroup = resources[fnId]?.Properties.LoggingConfig.LogGroup.Ref;

        expect(logs, id).toEqual([
          expect.objectContaining({
            Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
            Resource: { 'Fn::GetAtt': [logGroup, 'Arn'] },
          }),
        ]);
        const role = resources[fnId]?.Properties.Role['Fn::GetAtt'][0];
        expect(resources[role]?.Properties.ManagedPolicyArns, id).toBeUndefined();
      }
    });

    it('has no wildcard action, and a wildcard resource only where an action has no other', () => {
      const statements = s.all
        .flatMap((stack) => Object.values(s.template(stack).findResources('AWS::IAM::Policy')))
        .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Statement[]);
      // X-Ray's two write actions and Secrets Manager's GetRandomPassword (granted by CDK's
      // rotation schedule) have no resource-level permissions: '*' is their only resource.
      const unscoped = [
        'xray:PutTelemetryRecords',
        'xray:PutTraceSegments',
        'secretsmanager:GetRandomPassword',
      ];

      expect(statements.length).toBeGreaterThan(0);
      for (const statement of statements) {
        expect(actionsOf(statement).filter((a) => a.includes('*'))).toEqual([]);
        if (statement.Resource === '*') {
          expect(unscoped).toEqual(expect.arrayContaining(actionsOf(statement)));
        } else expect(JSON.stringify(statement.Resource)).not.toContain('*"');
      }
    });

    it('lets only the routes that accept the admin key, or sign cursors, read a secret', () => {
      for (const [id, route] of routeEntries()) {
        const { resources, logicalId: fnId } = s.fn(id);
        // Statements with the same action may be merged: count the secrets they name.
        const reads = statementsOf(resources, fnId)
          .filter((st) => actionsOf(st).includes('secretsmanager:GetSecretValue'))
          .flatMap((st) => [st.Resource].flat());

        // Every route's function reads the edge's origin-verify secret (-c edge=false: none).
        const expected = Number(acceptsAdminKey(route)) + Number(route.paginates === true) + 1;
        expect(reads.length, id).toBe(expected);
        expect(JSON.stringify(reads), id).toContain('OriginVerifySecret');
      }
    });
  });

  describe('table', () => {
    it('has on-demand billing, PITR, deletion protection, retain, TTL and exactly the store indexes', () => {
      const tables = s.template(s.stacks.data).findResources('AWS::DynamoDB::Table');
      const [table] = Object.values(tables);

      expect(Object.keys(tables)).toEqual(['TableCD117FA1']);
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
      const ephemeral = synth({ ephemeral: 'true' });

      ephemeral.template(ephemeral.stacks.data).hasResource('AWS::DynamoDB::Table', {
        DeletionPolicy: 'Delete',
        Properties: Match.objectLike({ DeletionProtectionEnabled: false }),
      });
      expect(ephemeral.stacks.data.terminationProtection).toBe(false);
    });

    it('protects the data stack from termination by default', () => {
      expect(s.stacks.data.terminationProtection).toBe(true);
    });
  });

  describe('sweeper', () => {
    it('is scheduled every minute, one at a time, not retried', () => {
      const { resources, logicalId: sweeperId } = s.fn('sweeper');
      const jobs = s.template(s.stacks.jobs);

      jobs.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: 'rate(1 minute)',
        State: 'ENABLED',
        Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [sweeperId, 'Arn'] } })],
      });
      expect(resources[sweeperId]?.Properties).toMatchObject({
        ReservedConcurrentExecutions: 1,
        Timeout: 60,
        Environment: { Variables: { EXPIRY_SWEEP_INTERVAL_MS: '5000' } },
      });
      jobs.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
        FunctionName: { Ref: sweeperId },
        MaximumRetryAttempts: 0,
      });
    });

    it('can run unreserved where the account quota leaves no concurrency to reserve', () => {
      const unreserved = synth({ reserveSweeperConcurrency: 'false' });
      const { resources, logicalId: sweeperId } = unreserved.fn('sweeper');

      expect(resources[sweeperId]?.Properties.ReservedConcurrentExecutions).toBeUndefined();
    });
  });

  describe('budget events', () => {
    it('enables the table stream with old and new images', () => {
      s.template(s.stacks.data).hasResourceProperties('AWS::DynamoDB::Table', {
        StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
      });
    });

    it('feeds the stream to the consumer in batches, bisected, partial failures, a DLQ', () => {
      const jobs = s.template(s.stacks.jobs);
      const queueId = logicalId(s.stacks.jobs, s.stacks.jobs.budgetEventsDlq);
      const mappings = Object.values(jobs.findResources('AWS::Lambda::EventSourceMapping')).filter(
        (m) => m.Properties.FunctionName.Ref === s.fn('budgetEvents').logicalId,
      );

      expect(mappings).toHaveLength(1);
      expect(mappings[0]?.Properties).toMatchObject({
        FunctionName: { Ref: s.fn('budgetEvents').logicalId },
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
      expect(filters.map((f) => JSON.parse(f.Pattern))).toEqual([
        {
          eventName: ['MODIFY'],
          dynamodb: { NewImage: { type: { S: ['ledger', 'ledger-shard', 'ledger-period'] } } },
        },
        {
          eventName: ['MODIFY'],
          dynamodb: {
            NewImage: { type: { S: ['reservation'] }, status: { S: ['EXPIRED', 'COMMITTED'] } },
          },
        },
        { eventName: ['INSERT'], dynamodb: { NewImage: { type: { S: ['refusal', 'audit'] } } } },
      ]);
    });

    it('feeds the reservations that leave ACTIVE to the estimate accuracy consumer, in large batches', () => {
      const jobs = s.template(s.stacks.jobs);
      const { logicalId: fnId, resources } = s.fn('estimateAccuracy');
      const [mapping, ...others] = Object.values(
        jobs.findResources('AWS::Lambda::EventSourceMapping'),
      ).filter((m) => m.Properties.FunctionName.Ref === fnId);

      expect(others).toEqual([]);
      expect(mapping?.Properties).toMatchObject({
        BatchSize: 1_000,
        MaximumBatchingWindowInSeconds: 30,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        MaximumRetryAttempts: 5,
        MaximumRecordAgeInSeconds: 3_600,
      });
      expect(
        ((mapping?.Properties.FilterCriteria.Filters ?? []) as { Pattern: string }[]).map((f) =>
          JSON.parse(f.Pattern),
        ),
      ).toEqual([
        {
          eventName: ['MODIFY'],
          dynamodb: {
            NewImage: {
              type: { S: ['reservation'] },
              status: { S: ['COMMITTED', 'RELEASED', 'EXPIRED'] },
            },
            OldImage: { status: { S: ['ACTIVE'] } },
          },
        },
      ]);
      // It reads and writes items (its own), and reads the stream.
      const actions = statementsOf(resources, fnId).flatMap(actionsOf);
      expect(actions).toContain('dynamodb:GetRecords');
      expect(actions).toContain('dynamodb:UpdateItem');
    });

    it('lets the consumer read the stream, write the table (the log, deliveries), put on the bus and send to the delivery queue, and nothing else', () => {
      const { resources, logicalId: fnId } = s.fn('budgetEvents');
      const busId = logicalId(s.stacks.data, s.stacks.data.eventBus);
      const statements = statementsOf(resources, fnId);
      const actions = statements.flatMap(actionsOf);
      const resourcesOf = (action: string) =>
        statements.filter((st) => actionsOf(st).includes(action)).map((st) => st.Resource);

      expect([...new Set(actions.filter((a) => a.startsWith('dynamodb:')))].sort()).toEqual(
        [
          ...READ_ACTIONS,
          ...WRITE_ACTIONS,
          'dynamodb:DescribeStream',
          'dynamodb:GetRecords',
          'dynamodb:GetShardIterator',
          'dynamodb:ListStreams',
        ].sort(),
      );
      expect(resourcesOf('dynamodb:GetRecords')).toEqual([
        { 'Fn::ImportValue': expect.stringMatching(/StreamArn/) },
      ]);
      expect(resourcesOf('events:PutEvents')).toEqual([
        { 'Fn::ImportValue': expect.stringContaining(busId) },
      ]);
      expect(actions.filter((a) => a.startsWith('sqs:'))).toContain('sqs:SendMessage');
      expect(actions.filter((a) => a.startsWith('kms:'))).toEqual([]);
      expect(resources[fnId]?.Properties).toMatchObject({
        Timeout: 60,
        Environment: {
          Variables: { EVENT_BUS_NAME: { 'Fn::ImportValue': expect.stringContaining(busId) } },
        },
      });
      s.template(s.stacks.data).hasOutput('EventBusName', {});
    });

    it('signs webhooks set by context with a generated secret only the consumer reads', () => {
      const hooked = synth({ webhookUrls: 'https://hooks.example.com/a' });
      const jobs = hooked.template(hooked.stacks.jobs);
      const { resources, logicalId: consumer } = hooked.fn('budgetEvents');
      const [secretId] = Object.keys(jobs.findResources('AWS::SecretsManager::Secret'));

      expect(resources[consumer]?.Properties).toMatchObject({
        Environment: {
          Variables: {
            WEBHOOK_URLS: 'https://hooks.example.com/a',
            WEBHOOK_SECRET_ID: { Ref: secretId },
          },
        },
      });
      const readers = Object.keys(resources).filter((id) =>
        statementsOf(resources, id).some(
          (st) => JSON.stringify(st.Resource) === JSON.stringify({ Ref: secretId }),
        ),
      );
      expect(readers).toEqual([consumer]);
      jobs.hasOutput('WebhookSecretId', {});
    });
  });

  describe('webhook delivery', () => {
    it('feeds the delivery queue to the delivery function: batches of 10, partial failures, bounded concurrency, a DLQ', () => {
      const jobs = s.template(s.stacks.jobs);
      const queueId = logicalId(s.stacks.jobs, s.stacks.jobs.deliveryQueue);
      const dlqId = logicalId(s.stacks.jobs, s.stacks.jobs.deliveryDlq);

      jobs.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        FunctionName: { Ref: s.fn('webhookDelivery').logicalId },
        EventSourceArn: { 'Fn::GetAtt': [queueId, 'Arn'] },
        BatchSize: 10,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        ScalingConfig: { MaximumConcurrency: 20 },
      });
      jobs.hasResourceProperties('AWS::SQS::Queue', {
        RedrivePolicy: {
          deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] },
          maxReceiveCount: 20,
        },
        VisibilityTimeout: 540,
      });
    });

    it('lets only the delivery function Decrypt with the webhook key, and only the routes that seal Encrypt, each under a subscription’s context', () => {
      const keyId = logicalId(s.stacks.data, s.stacks.data.webhookKey);
      const kms = new Map<string, string[]>();
      const functions: [string, Resources, string][] = [
        ...routeEntries().map(([id]): [string, Resources, string] => {
          const f = s.fn(id);
          return [id, f.resources, f.logicalId];
        }),
        ...(['sweeper', 'budgetEvents', 'webhookDelivery', 'adminKeyRotation'] as const).map(
          (id): [string, Resources, string] => {
            const f = s.fn(id);
            return [id, f.resources, f.logicalId];
          },
        ),
      ];
      for (const [id, resources, fnId] of functions) {
        for (const st of statementsOf(resources, fnId)) {
          for (const action of actionsOf(st).filter((a) => a.startsWith('kms:'))) {
            expect(JSON.stringify(st.Resource), id).toContain(keyId);
            expect((st as { Condition?: unknown }).Condition, id).toEqual({
              StringLike: { 'kms:EncryptionContext:subscription_id': 'whsub_*' },
            });
            kms.set(action, [...(kms.get(action) ?? []), id]);
          }
        }
      }
      const sealing = routeEntries()
        .filter(([, r]) => r.webhooks?.includes('seal'))
        .map(([id]) => id);

      expect(kms.get('kms:Decrypt')).toEqual(['webhookDelivery']);
      expect(kms.get('kms:Encrypt')?.sort()).toEqual([...sealing].sort());
      expect([...kms.keys()].sort()).toEqual(['kms:Decrypt', 'kms:Encrypt']);
    });

    it('lets only the probe routes invoke the delivery function, and only the queueing ones send to its queue', () => {
      const deliveryFn = s.fn('webhookDelivery');
      for (const [id, route] of routeEntries()) {
        const { resources, logicalId: fnId } = s.fn(id);
        const actions = statementsOf(resources, fnId).flatMap(actionsOf);
        expect(actions.includes('lambda:InvokeFunction'), id).toBe(
          route.webhooks?.includes('probe') ?? false,
        );
        expect(actions.includes('sqs:SendMessage'), id).toBe(
          route.webhooks?.includes('enqueue') ?? false,
        );
        if (route.webhooks?.includes('probe')) {
          expect(
            resources[fnId]?.Properties.Environment.Variables.WEBHOOK_DELIVERY_FUNCTION,
          ).toEqual({
            'Fn::ImportValue': expect.stringContaining(deliveryFn.logicalId),
          });
        }
      }
    });
  });

  describe('admin key', () => {
    it('is a generated secret, referenced by id, never a plaintext value', () => {
      const text = JSON.stringify(s.all.map((stack) => s.template(stack).toJSON()));

      s.template(s.stacks.data).hasResourceProperties('AWS::SecretsManager::Secret', {
        GenerateSecretString: Match.objectLike({ PasswordLength: 48 }),
      });
      expect(text).not.toContain('"SecretString"');
      expect(text).not.toMatch(/"ADMIN_API_KEY"\s*:/);
      expect(text).not.toContain('change-me');
      for (const stack of s.all) {
        for (const fn of serviceFunctions(s.template(stack).toJSON().Resources as Resources)) {
          expect(Object.keys(fn.Properties.Environment.Variables)).not.toContain('ADMIN_API_KEY');
        }
      }
    });

    it('is rotated every 30 days by its own function, which may change that secret only', () => {
      const [secretId = ''] = Object.keys(
        s.template(s.stacks.data).findResources('AWS::SecretsManager::Secret', {
          Properties: { Description: Match.stringLikeRegexp('X-Admin-API-Key') },
        }),
      );
      const jobs = s.template(s.stacks.jobs);
      const { resources, logicalId: rotation } = s.fn('adminKeyRotation');
      const theSecret = { 'Fn::ImportValue': expect.stringContaining(secretId) };

      jobs.hasResourceProperties('AWS::SecretsManager::RotationSchedule', {
        SecretId: Match.objectLike({ 'Fn::ImportValue': Match.stringLikeRegexp(secretId) }),
        RotationLambdaARN: { 'Fn::GetAtt': [rotation, 'Arn'] },
        RotationRules: { ScheduleExpression: 'rate(30 days)' },
        RotateImmediatelyOnUpdate: false,
      });
      jobs.hasResourceProperties('AWS::Lambda::Permission', {
        FunctionName: { 'Fn::GetAtt': [rotation, 'Arn'] },
        Principal: 'secretsmanager.amazonaws.com',
      });
      const changes = statementsOf(resources, rotation).filter((st) =>
        actionsOf(st).includes('secretsmanager:PutSecretValue'),
      );
      expect(changes).toEqual([
        expect.objectContaining({
          Action: expect.arrayContaining([
            'secretsmanager:GetSecretValue',
            'secretsmanager:PutSecretValue',
            'secretsmanager:UpdateSecretVersionStage',
          ]),
          Resource: theSecret,
        }),
      ]);
      expect(resources[rotation]?.Properties.Environment.Variables).not.toHaveProperty(
        'TABLE_NAME',
      );
    });

    it('is rotated as often as -c adminKeyRotationDays says', () => {
      const every90 = synth({ adminKeyRotationDays: '90' });

      every90
        .template(every90.stacks.jobs)
        .hasResourceProperties('AWS::SecretsManager::RotationSchedule', {
          RotationRules: { ScheduleExpression: 'rate(90 days)' },
        });
      expect(() => synth({ adminKeyRotationDays: 'monthly' })).toThrow(/adminKeyRotationDays/);
    });

    it('can name an existing secret instead, granted by name pattern and not rotated by the stack', () => {
      const named = synth({ adminApiKeySecretName: 'budgets/admin-key' });
      const admin = named.template(named.stacks.routes.get('admin') as never);

      admin.hasResourceProperties('AWS::Lambda::Function', {
        Environment: {
          Variables: Match.objectLike({ ADMIN_API_KEY_SECRET_ID: 'budgets/admin-key' }),
        },
      });
      expect(JSON.stringify(admin.toJSON())).toContain(':secret:budgets/admin-key-??????');
      named.template(named.stacks.jobs).resourceCountIs('AWS::SecretsManager::RotationSchedule', 0);
      expect(named.stacks.jobs.adminKeyRotation).toBeUndefined();
    });
  });

  describe('HTTP APIs', () => {
    it('gives each API its own $default stage with throttling and access logs', () => {
      for (const key of ['runtime', 'admin']) {
        const stages = Object.values(
          s.template(routeStack(key)).findResources('AWS::ApiGatewayV2::Stage'),
        );

        expect(stages, key).toHaveLength(1);
        expect(stages[0]?.Properties).toMatchObject({
          StageName: '$default',
          AutoDeploy: true,
          DefaultRouteSettings: {
            ThrottlingRateLimit: expect.any(Number),
            ThrottlingBurstLimit: expect.any(Number),
          },
          AccessLogSettings: {
            DestinationArn: expect.anything(),
            Format: expect.stringContaining(`"api":"${key}"`),
          },
        });
      }
    });

    it('outputs both base URLs, each from its API’s stack', () => {
      s.template(routeStack('runtime')).hasOutput('RuntimeUrl', {});
      s.template(routeStack('admin')).hasOutput('AdminUrl', {});
    });

    it('maps both APIs on a custom domain set by context, admin under /admin (-c edge=false)', () => {
      const mapped = synth({
        edge: 'false',
        domainName: 'budgets.example.com',
        certificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/abc',
      });
      const admin = mapped.template(mapped.stacks.routes.get('admin') as never);
      const runtime = mapped.template(mapped.stacks.routes.get('runtime') as never);

      admin.resourceCountIs('AWS::ApiGatewayV2::DomainName', 1);
      admin.hasResourceProperties('AWS::ApiGatewayV2::ApiMapping', { ApiMappingKey: 'admin' });
      runtime.resourceCountIs('AWS::ApiGatewayV2::ApiMapping', 1);
      admin.hasOutput('AdminUrl', { Value: 'https://budgets.example.com/admin' });
      runtime.hasOutput('RuntimeUrl', { Value: 'https://budgets.example.com' });
      admin.hasOutput('DomainTarget', {});
    });
  });

  describe('observability', () => {
    const monitoring = () => s.template(s.stacks.monitoring as never);
    const alarms = () =>
      Object.values(monitoring().findResources('AWS::CloudWatch::Alarm')).map(
        (a) => a.Properties as Record<string, unknown>,
      );
    const alarmNamed = (suffix: string) =>
      alarms().find((a) => a.AlarmName === `BudgetReservations-${suffix}-Critical`);
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

    it('traces every function with Lambda’s active tracing and no X-Ray SDK, unless -c tracing=false', () => {
      const off = synth({ tracing: 'false', metricsTenantDimension: 'true' });
      const functions = (x: Synthesized) =>
        x.all.flatMap((stack) =>
          serviceFunctions(x.template(stack).toJSON().Resources as Resources),
        );

      for (const fn of functions(s)) {
        expect(fn.Properties.TracingConfig).toEqual({ Mode: 'Active' });
        expect(fn.Properties.Environment.Variables).not.toHaveProperty('POWERTOOLS_TRACE_ENABLED');
      }
      for (const fn of functions(off)) {
        expect(fn.Properties.TracingConfig).toBeUndefined();
      }
      for (const fn of functions(off).filter((f) => f.Properties.Environment.Variables.TABLE_NAME))
        expect(fn.Properties.Environment.Variables.METRICS_TENANT_DIMENSION).toBe('true');
      expect(JSON.stringify(off.all.map((x) => off.template(x).toJSON()))).not.toContain('xray:');
    });

    it('names the metrics namespace and the deployment as service, with no tenant dimension by default', () => {
      for (const [id] of routeEntries()) {
        const { resources, logicalId: fnId } = s.fn(id);
        const variables = resources[fnId]?.Properties.Environment.Variables;
        expect(variables).toMatchObject({
          POWERTOOLS_SERVICE_NAME: 'BudgetReservations',
          POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
        });
        expect(variables).not.toHaveProperty('METRICS_TENANT_DIMENSION');
      }
    });

    it('has one dashboard: both APIs, every EMF metric of the catalog, DynamoDB, the sweeper, every alarm', () => {
      const dashboards = Object.values(monitoring().findResources('AWS::CloudWatch::Dashboard'));
      const body = JSON.stringify(dashboards[0]?.Properties.DashboardBody);

      expect(dashboards).toHaveLength(1);
      expect(dashboards[0]?.Properties.DashboardName).toBe('BudgetReservations');
      for (const name of Object.keys(METRICS)) expect(body, name).toContain(name);
      expect(body).toContain(METRICS_NAMESPACE);
      for (const apiMetric of ['\\"Count\\"', '\\"4xx\\"', '\\"5xx\\"', 'p50', 'p99'])
        expect(body, apiMetric).toContain(apiMetric);
      // Throttles and errors of each API's functions, found by their stack's name.
      for (const stack of ['BudgetReservationsRuntimeApi', 'BudgetReservationsAdminApi'])
        expect(body).toContain(`MetricName=\\\\\\"Throttles\\\\\\" \\\\\\"${stack}\\\\\\"`);
      expect(body).toContain('TransactionConflict');
      // The functions' rate-limit refusals: their busy answers of reason RATE_LIMIT, a line.
      expect(body).toMatch(
        /\\"BusyAnswers\\",\\"Reason\\",\\"RATE_LIMIT\\"[^\]]*429: a key's, tenant's or policy's rate limit/,
      );
      // The alarm widget lists every alarm.
      for (const alarm of Object.keys(monitoring().findResources('AWS::CloudWatch::Alarm')))
        expect(body, alarm).toContain(alarm);
    });

    it('alarms on Lambda throttles once for every function, not once per function', () => {
      expect(watched(alarmNamed('Lambda-Throttles'))).toEqual({
        namespace: 'AWS/Lambda',
        name: 'Throttles',
        dimensions: undefined,
        stat: 'Sum',
      });
      expect(alarms().filter((a) => String(a.AlarmName).includes('Throttles'))).toHaveLength(2);
    });

    it('alarms per API on the 5xx, 4xx and 429 shares of requests', () => {
      for (const api of ['RuntimeApi', 'AdminApi']) {
        for (const [what, threshold, periods] of [
          ['5xx', 1, 1],
          ['4xx', 25, 3],
          ['429', 1, 1],
        ] as const) {
          const alarm = alarmNamed(`${api}-${what}Rate`);
          expect(alarm, `${api} ${what}`).toMatchObject({
            ComparisonOperator: 'GreaterThanOrEqualToThreshold',
            Threshold: threshold,
            EvaluationPeriods: periods,
            DatapointsToAlarm: periods,
            Metrics: expect.arrayContaining([
              expect.objectContaining({
                Expression: expect.stringMatching(
                  /^IF\(requests >= \d+, 100 \* s\w+ \/ requests, 0\)$/,
                ),
              }),
            ]),
          });
        }
      }
      // 429s are counted from each stage's access logs.
      const filters = Object.values(monitoring().findResources('AWS::Logs::MetricFilter'));
      expect(filters.map((f) => f.Properties.FilterPattern)).toEqual([
        '{ $.status = "429" }',
        '{ $.status = "429" }',
      ]);
    });

    it('alarms when the budget events consumer falls behind the stream (IteratorAge)', () => {
      expect(watched(alarmNamed('BudgetEvents-IteratorAge'))).toMatchObject({
        namespace: 'AWS/Lambda',
        name: 'IteratorAge',
        stat: 'Maximum',
      });
      expect(alarmNamed('BudgetEvents-IteratorAge')).toMatchObject({ Threshold: 300_000 });
    });

    it('keeps the table, sweeper and DLQ alarms', () => {
      expect(alarmNamed('Table-Throttles')).toBeDefined();
      expect(alarmNamed('Sweeper-Fault-Count')).toMatchObject({
        ComparisonOperator: 'GreaterThanThreshold',
        Threshold: 0,
      });
      const heartbeat = alarmNamed('Sweeper-Heartbeat');
      const service = [{ Name: 'service', Value: 'BudgetReservations' }];
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
      expect(watched(alarmNamed('Sweeper-Lag'))).toEqual({
        namespace: METRICS_NAMESPACE,
        name: 'SweepLag',
        dimensions: service,
        stat: 'Maximum',
      });
      expect(alarmNamed('BudgetEvents-Dropped')).toMatchObject({
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Threshold: 1,
      });
    });

    it('sends every alarm to the alarm topic, which takes only TLS publishers', () => {
      const topics = monitoring().findResources('AWS::SNS::Topic');
      const [topic] = Object.keys(topics);

      expect(
        alarms()
          .map((a) => String(a.AlarmName).replace(/^BudgetReservations-|-Critical$/g, ''))
          .sort(),
      ).toEqual([
        'AdminApi-429Rate',
        'AdminApi-4xxRate',
        'AdminApi-5xxRate',
        'BudgetEvents-DeliveriesDeadLettered',
        'BudgetEvents-Dropped',
        'BudgetEvents-IteratorAge',
        'Lambda-Throttles',
        'RuntimeApi-429Rate',
        'RuntimeApi-4xxRate',
        'RuntimeApi-5xxRate',
        'Sweeper-Fault-Count',
        'Sweeper-Heartbeat',
        'Sweeper-Lag',
        'Table-Throttles',
      ]);
      for (const alarm of alarms()) expect(alarm.AlarmActions).toEqual([{ Ref: topic }]);
      monitoring().hasResourceProperties('AWS::SNS::TopicPolicy', {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({
              Effect: 'Deny',
              Condition: { Bool: { 'aws:SecureTransport': 'false' } },
            }),
          ]),
        },
      });
    });
  });

  describe('cdk-nag (AwsSolutions)', () => {
    it('finds nothing unacknowledged, whatever the context', () => {
      // synth() throws on any finding without an acknowledgement; these are the variants.
      for (const context of [
        {},
        { tracing: 'false' },
        { webhookUrls: 'https://hooks.example.com/a' },
        { adminApiKeySecretName: 'budgets/admin-key' },
        { monitoring: 'false', alarmEmail: 'ops@example.com' },
        { ephemeral: 'true', reserveSweeperConcurrency: 'false' },
        { edge: 'false' },
        {
          domainName: 'budgets.example.com',
          certificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/abc',
          adminAllowList: '203.0.113.0/24, 2001:db8::/32',
        },
      ]) {
        expect(() => synth(context), JSON.stringify(context)).not.toThrow();
      }
    });

    it('acknowledges each rule it does not fix with a written reason', () => {
      const reasons = new Map<string, string>();
      for (const stack of s.all) {
        for (const child of stack.node.findAll()) {
          for (const m of child.node.metadata) {
            if (m.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
            for (const [id, reason] of Object.entries(m.data as Record<string, string>))
              reasons.set(id.replace(/^\w+::/, ''), reason);
          }
        }
      }

      expect([...reasons.keys()].sort()).toEqual([
        'AwsSolutions-APIG4',
        // The edge: no geo restriction, no CloudFront standard logs, the default certificate.
        'AwsSolutions-CFR1',
        'AwsSolutions-CFR3',
        'AwsSolutions-CFR4',
        // CDK's AwsCustomResource provider, which reads the web ACL's ARN at deploy time.
        'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
        'AwsSolutions-IAM5[Resource::*]',
        'AwsSolutions-L1',
        'AwsSolutions-SMG4',
        'AwsSolutions-SQS3',
      ]);
      for (const [id, reason] of reasons) expect(reason.length, id).toBeGreaterThan(40);
    });
  });

  it('keeps the same resource types and counts per stack (update deliberately when a stack changes)', () => {
    expect(
      Object.fromEntries(
        s.all.map((stack) => [stack.stackName, resourceCounts(s.template(stack))]),
      ),
    ).toMatchInlineSnapshot(`
      {
        "BudgetReservationsAdminApi": {
          "AWS::ApiGatewayV2::Api": 1,
          "AWS::ApiGatewayV2::Integration": 26,
          "AWS::ApiGatewayV2::Route": 26,
          "AWS::ApiGatewayV2::Stage": 1,
          "AWS::IAM::Policy": 25,
          "AWS::IAM::Role": 25,
          "AWS::Lambda::Function": 25,
          "AWS::Lambda::Permission": 26,
          "AWS::Logs::LogGroup": 26,
        },
        "BudgetReservationsData": {
          "AWS::DynamoDB::Table": 1,
          "AWS::Events::EventBus": 1,
          "AWS::KMS::Key": 1,
          "AWS::SecretsManager::ResourcePolicy": 1,
          "AWS::SecretsManager::Secret": 3,
        },
        "BudgetReservationsEdge": {
          "AWS::CloudFront::Distribution": 1,
          "AWS::CloudFront::Function": 1,
          "AWS::IAM::Policy": 1,
          "AWS::IAM::Role": 1,
          "AWS::Lambda::Function": 1,
          "AWS::Logs::LogGroup": 1,
          "Custom::AWS": 1,
        },
        "BudgetReservationsEdgeFirewall": {
          "AWS::SSM::Parameter": 1,
          "AWS::WAFv2::WebACL": 1,
        },
        "BudgetReservationsEventsApi": {
          "AWS::ApiGatewayV2::Integration": 22,
          "AWS::ApiGatewayV2::Route": 22,
          "AWS::IAM::Policy": 22,
          "AWS::IAM::Role": 22,
          "AWS::Lambda::Function": 22,
          "AWS::Lambda::Permission": 22,
          "AWS::Logs::LogGroup": 22,
        },
        "BudgetReservationsGovernanceApi": {
          "AWS::ApiGatewayV2::Integration": 7,
          "AWS::ApiGatewayV2::Route": 7,
          "AWS::IAM::Policy": 7,
          "AWS::IAM::Role": 7,
          "AWS::Lambda::Function": 7,
          "AWS::Lambda::Permission": 7,
          "AWS::Logs::LogGroup": 7,
        },
        "BudgetReservationsJobs": {
          "AWS::Events::Rule": 1,
          "AWS::IAM::Policy": 5,
          "AWS::IAM::Role": 5,
          "AWS::Lambda::EventInvokeConfig": 1,
          "AWS::Lambda::EventSourceMapping": 3,
          "AWS::Lambda::Function": 5,
          "AWS::Lambda::Permission": 2,
          "AWS::Logs::LogGroup": 5,
          "AWS::SQS::Queue": 3,
          "AWS::SQS::QueuePolicy": 3,
          "AWS::SecretsManager::RotationSchedule": 1,
        },
        "BudgetReservationsMonitoring": {
          "AWS::CloudWatch::Alarm": 14,
          "AWS::CloudWatch::Dashboard": 1,
          "AWS::Logs::MetricFilter": 2,
          "AWS::SNS::Topic": 1,
          "AWS::SNS::TopicPolicy": 1,
        },
        "BudgetReservationsRuntimeApi": {
          "AWS::ApiGatewayV2::Api": 1,
          "AWS::ApiGatewayV2::Integration": 15,
          "AWS::ApiGatewayV2::Route": 15,
          "AWS::ApiGatewayV2::Stage": 1,
          "AWS::IAM::Policy": 13,
          "AWS::IAM::Role": 13,
          "AWS::Lambda::Function": 13,
          "AWS::Lambda::Permission": 15,
          "AWS::Logs::LogGroup": 14,
        },
        "BudgetReservationsSettlementApi": {
          "AWS::ApiGatewayV2::Integration": 11,
          "AWS::ApiGatewayV2::Route": 11,
          "AWS::IAM::Policy": 7,
          "AWS::IAM::Role": 7,
          "AWS::Lambda::Function": 7,
          "AWS::Lambda::Permission": 11,
          "AWS::Logs::LogGroup": 7,
        },
      }
    `);
  });
});
