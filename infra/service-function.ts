import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Effect, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, LoggingFormat, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { LogLevel, NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { RouteFacts } from '../functions/http/route-facts.js';
import type { Route, RouteId, TableAccess } from '../functions/routes.js';
import { RATE_PREFIX } from '../functions/store/keys.js';

export const repoRoot = fileURLToPath(new URL('..', import.meta.url));

/**
 * The esbuild options of every function, shared with `npm run build` so the sizes it prints are
 * the sizes deployed. The AWS SDK is left out: the Node.js 22 runtime provides it (docs/deploy.md
 * § Bundling explains why). CommonJS output: the runtime's SDK is CommonJS, and `require` loads
 * it about 30 ms faster than an ES module's `import` does (Node lexes a CommonJS module's
 * exports before an import can bind them; docs/deploy.md § Cold start). The one ESM idiom the
 * functions use, `import.meta.url` (the console finds its files beside its bundle), is defined
 * from `__filename`.
 */
export const esbuildOptions = {
  platform: 'node',
  format: 'cjs',
  target: 'node22',
  mainFields: ['module', 'main'],
  minify: true,
  sourcemap: true,
  sourcesContent: false,
  external: ['@aws-sdk/*'],
  define: { 'import.meta.url': '__importMetaUrl' },
  banner: "const __importMetaUrl = require('node:url').pathToFileURL(__filename).href;",
} as const;

/**
 * The defines that build a function for its one route (functions/http/route-facts.ts): the
 * route's facts as a constant, so no bundle carries the whole route table.
 */
export function routeDefines(id: string, route: Route): Record<string, string> {
  const facts: RouteFacts = {
    id,
    auth: route.auth,
    status: route.status,
    path: route.path,
    ...(route.rate && { rate: route.rate }),
  };
  return { 'globalThis.__ONE_ROUTE__': 'true', __ROUTE_FACTS__: JSON.stringify(facts) };
}

/** A handler module under functions/, e.g. 'runtime/create-reservation'. */
export const entryFile = (entry: string): string => join(repoRoot, 'functions', `${entry}.ts`);

export interface ServiceFunctionProps {
  /** Handler module under functions/ without extension; it exports `handler`. */
  readonly entry: string;
  /** @default 512 */
  readonly memorySize?: number;
  /** @default Duration.seconds(10) */
  readonly timeout?: Duration;
  /** Merged over the house default NODE_OPTIONS=--enable-source-maps. @default {} */
  readonly environment?: Readonly<Record<string, string>>;
  /** @default RetentionDays.ONE_MONTH */
  readonly logRetention?: RetentionDays;
  /** What deleting the stack does to the function's logs. @default RemovalPolicy.RETAIN */
  readonly logRemovalPolicy?: RemovalPolicy;
  /** @default - no reserved concurrency */
  readonly reservedConcurrentExecutions?: number;
  /** @default - none */
  readonly description?: string;
  /**
   * Lambda's active X-Ray tracing: the invocation's own segments (initialization, invocation,
   * overhead). No X-Ray SDK runs in the function: DynamoDB call timings are in its log lines and
   * metrics instead (docs/decisions.md § Tracing).
   * @default true
   */
  readonly tracing?: boolean;
  /**
   * Shell commands run in the repo root once the bundle is built, given the folder it is in:
   * files they write there ship with the function. @default - none
   */
  readonly afterBundling?: (outputDir: string) => string[];
  /** The route the function serves, if it is one: built with its facts (routeDefines). */
  readonly route?: { readonly id: RouteId; readonly route: Route };
}

// Exactly the calls functions/store/*.ts makes. Transactions have no actions of their own: each
// Put / Update / ConditionCheck of a TransactWriteItems is authorized by PutItem / UpdateItem /
// ConditionCheckItem, and each Get of a TransactGetItems (a sharded budget's atomic read) by GetItem.
export const READ_ACTIONS = ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'];
export const WRITE_ACTIONS = [
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:ConditionCheckItem',
];

/**
 * NodejsFunction with the house defaults: Node.js 22, arm64, minified CommonJS, JSON logs to its
 * own log group, active tracing, and a role of its own that may write to that log group and
 * nothing else until granted more (grantTable, grantSecretRead, …).
 */
export class ServiceFunction extends NodejsFunction {
  constructor(scope: Construct, id: string, props: ServiceFunctionProps) {
    const tracing = props.tracing ?? true;
    // Our own log group, so retention is set without the LogRetention custom-resource Lambda.
    const logGroup = new LogGroup(scope, `${id}Logs`, {
      retention: props.logRetention ?? RetentionDays.ONE_MONTH,
      removalPolicy: props.logRemovalPolicy ?? RemovalPolicy.RETAIN,
    });
    // Not AWSLambdaBasicExecutionRole, which may write to every log group of the account.
    const role = new Role(scope, `${id}Role`, {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
    });
    role.addToPolicy(
      new PolicyStatement({
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [logGroup.logGroupArn],
      }),
    );
    super(scope, id, {
      entry: entryFile(props.entry),
      handler: 'handler',
      projectRoot: repoRoot,
      depsLockFilePath: join(repoRoot, 'package-lock.json'),
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout ?? Duration.seconds(10),
      reservedConcurrentExecutions: props.reservedConcurrentExecutions,
      description: props.description,
      role,
      logGroup,
      loggingFormat: LoggingFormat.JSON,
      // X-Ray's PutTraceSegments has no resource-level permission: CDK grants it on '*'.
      ...(tracing && { tracing: Tracing.ACTIVE }),
      environment: {
        NODE_OPTIONS: '--enable-source-maps',
        ...props.environment,
      },
      bundling: {
        format: OutputFormat.CJS,
        target: esbuildOptions.target,
        mainFields: [...esbuildOptions.mainFields],
        minify: esbuildOptions.minify,
        sourceMap: esbuildOptions.sourcemap,
        sourcesContent: esbuildOptions.sourcesContent,
        bundleAwsSDK: false,
        externalModules: [...esbuildOptions.external],
        define: {
          ...esbuildOptions.define,
          ...(props.route && routeDefines(props.route.id, props.route.route)),
        },
        banner: esbuildOptions.banner,
        logLevel: LogLevel.WARNING,
        ...(props.afterBundling && {
          commandHooks: {
            beforeBundling: () => [],
            beforeInstall: () => [],
            afterBundling: (_inputDir: string, outputDir: string) =>
              props.afterBundling?.(outputDir) ?? [],
          },
        }),
      },
    });
    Validations.of(this).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        'Node.js 22 is a supported LTS runtime (until 2027-04-30) and the one the bundles target (node22) and the tests run like; move every function at once, deliberately',
    });
    if (tracing) {
      Validations.of(role).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          'active tracing: xray:PutTraceSegments and PutTelemetryRecords have no resource-level permissions, so * is their only resource',
      });
    }
  }

  /** Grants exactly `use` on the table and the named indexes; never a wildcard. */
  grantTable(table: ITable, use: TableAccess): void {
    const items = use.items === 'write' ? [...READ_ACTIONS, ...WRITE_ACTIONS] : READ_ACTIONS;
    if (use.items) this.allow(items, [table.tableArn]);
    const indexes = use.indexes ?? [];
    if (indexes.length > 0) {
      // Only Query applies to an index; items are fetched back from the table.
      this.allow(
        ['dynamodb:Query'],
        indexes.map((name) => `${table.tableArn}/index/${name}`),
      );
    }
    if (use.describe) this.allow(['dynamodb:DescribeTable'], [table.tableArn]);
  }

  /**
   * What Lambda's event source mapping needs to read the table's stream, on that stream alone
   * (CDK's DynamoEventSource would add ListStreams on every resource).
   */
  grantStreamRead(table: ITable): void {
    if (!table.tableStreamArn) throw new Error('the table has no stream');
    this.allow(
      [
        'dynamodb:DescribeStream',
        'dynamodb:GetRecords',
        'dynamodb:GetShardIterator',
        'dynamodb:ListStreams',
      ],
      [table.tableStreamArn],
    );
  }

  /**
   * Encrypt (seal) or Decrypt (open) with the webhook key, and only with a subscription's
   * encryption context (outbound/sealing.ts binds every value to its subscription id).
   */
  grantSealing(keyArn: string, action: 'kms:Encrypt' | 'kms:Decrypt'): void {
    this.addToRolePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: [action],
        resources: [keyArn],
        conditions: { StringLike: { 'kms:EncryptionContext:subscription_id': 'whsub_*' } },
      }),
    );
  }

  /** Lets the function invoke one other function (a /test probe in the delivery function). */
  grantInvokeOf(functionArn: string): void {
    this.allow(['lambda:InvokeFunction'], [functionArn]);
  }

  /** Lets the function read one secret: GetSecretValue on that ARN, nothing else. */
  grantSecretRead(secretPolicyArn: string): void {
    this.allow(['secretsmanager:GetSecretValue'], [secretPolicyArn]);
  }

  /**
   * What the rate limiter of a tenant route needs (functions/http/rate-limits.ts): a tenant's
   * limits (GetItem on its record) and its counters (UpdateItem), on those partitions alone.
   */
  grantRateCounters(table: ITable): void {
    this.addToRolePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['dynamodb:GetItem'],
        resources: [table.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['TENANT#*'] } },
      }),
    );
    this.addToRolePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['dynamodb:UpdateItem'],
        resources: [table.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${RATE_PREFIX}*`] } },
      }),
    );
  }

  private allow(actions: string[], resources: string[]): void {
    this.addToRolePolicy(new PolicyStatement({ effect: Effect.ALLOW, actions, resources }));
  }
}
