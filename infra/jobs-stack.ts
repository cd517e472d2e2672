import {
  CfnOutput,
  Duration,
  RemovalPolicy,
  Stack,
  type StackProps,
  Validations,
} from 'aws-cdk-lib';
import { type IEventBus, Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { FilterCriteria, FilterRule, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import { type ISecret, RotationSchedule, Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import {
  adminKeyRotation,
  budgetEventsConsumer,
  estimateAccuracyConsumer,
  sweeper,
} from '../functions/routes.js';
import { EVENT_ITEM_TYPES } from '../functions/store/table.js';
import { commonEnvironment, type FunctionDefaults, functionLogs, sizingOf } from './api-stack.js';
import { ServiceFunction } from './service-function.js';

export interface JobsStackProps extends StackProps, FunctionDefaults {
  /** The bus budget events are put on (the data stack's). */
  readonly eventBus: IEventBus;
  /** EXPIRY_SWEEP_INTERVAL_MS of the sweeper. @default Duration.seconds(5) */
  readonly sweepInterval?: Duration;
  /**
   * Reserve concurrency 1 for the sweeper. Lambda keeps 100 of an account's concurrency
   * unreserved, so accounts still at the new-account quota of 10 must set this to false.
   * @default true
   */
  readonly reserveSweeperConcurrency?: boolean;
  /**
   * Webhook URLs the budget events consumer also POSTs every event to, signed with a secret the
   * stack generates (output `WebhookSecretId`). The bus gets every event regardless.
   * @default - none: events go to the bus only
   */
  readonly webhookUrls?: readonly string[];
  /** The generated admin key, rotated here. @default - none: the key is yours to rotate */
  readonly adminApiKeySecret?: ISecret;
  /** How often the admin key is rotated. @default Duration.days(30) */
  readonly adminKeyRotation?: Duration;
}

/**
 * The service's background work, which no request waits for: the every-minute expiry sweeper,
 * the budget events consumer that reads the table's stream and puts events on the bus (and
 * webhooks), with the DLQ of the batches it gives up on, and the admin key's rotation.
 */
export class JobsStack extends Stack {
  readonly sweeper: ServiceFunction;
  readonly budgetEvents: ServiceFunction;
  readonly estimateAccuracy: ServiceFunction;
  /** @default - none when the admin key is a secret of yours */
  readonly adminKeyRotation?: ServiceFunction;
  /** Stream batches that never went through (their metadata: shard and sequence numbers). */
  readonly budgetEventsDlq: Queue;

  constructor(scope: Construct, id: string, props: JobsStackProps) {
    super(scope, id, props);
    this.sweeper = this.expirySweeper(props);
    this.budgetEventsDlq = new Queue(this, 'BudgetEventsDlq', {
      retentionPeriod: Duration.days(14),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    Validations.of(this.budgetEventsDlq).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'this queue is itself a dead-letter queue: the on-failure destination of the stream mapping (docs/deploy.md § Budget events); nothing consumes it to need one',
    });
    this.budgetEvents = this.budgetEventsConsumer(props);
    this.estimateAccuracy = this.estimateAccuracyConsumer(props);
    if (props.adminApiKeySecret) {
      this.adminKeyRotation = this.rotateAdminKey(props, props.adminApiKeySecret);
    }
  }

  /**
   * The admin key's rotation: a small function that puts a new random value through Secrets
   * Manager's rotation steps (functions/jobs/rotate-admin-key.ts). The functions accept the
   * value it replaced (AWSPREVIOUS) too, so nobody is locked out by a rotation: operators have
   * until the next one to pick up the new key (docs/deploy.md § Rotating the admin key).
   */
  private rotateAdminKey(props: JobsStackProps, secret: ISecret): ServiceFunction {
    const fn = new ServiceFunction(this, 'AdminKeyRotation', {
      ...functionLogs(props),
      entry: adminKeyRotation.entry,
      description: 'rotates the admin key: a new random value, the old one kept as AWSPREVIOUS',
      ...sizingOf(adminKeyRotation),
    });
    new RotationSchedule(this, 'AdminKeyRotationSchedule', {
      secret,
      rotationLambda: fn,
      automaticallyAfter: props.adminKeyRotation ?? Duration.days(30),
      // The key read right after a deploy stays current until the first scheduled rotation.
      rotateImmediatelyOnUpdate: false,
    });
    if (!fn.role) throw new Error('a ServiceFunction always has its own role');
    Validations.of(fn.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        "CDK's rotation schedule grants secretsmanager:GetRandomPassword, which has no resource-level permissions (the function makes its keys with node:crypto); with tracing, X-Ray's two actions likewise",
    });
    return fn;
  }

  private expirySweeper(props: JobsStackProps): ServiceFunction {
    const interval = props.sweepInterval ?? Duration.seconds(5);
    // One minute: the handler stops sweeping ~5 s before it, just before the next tick starts.
    const fn = new ServiceFunction(this, 'Sweeper', {
      ...functionLogs(props),
      entry: sweeper.entry,
      description: 'expires reservations past their grace period',
      ...sizingOf(sweeper),
      // At most one sweeper at a time. A second one would still be safe (every expiry is a
      // transaction conditioned on ACTIVE-and-due), only wasteful.
      ...(props.reserveSweeperConcurrency !== false && { reservedConcurrentExecutions: 1 }),
      environment: {
        ...commonEnvironment(props),
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
   * The table's stream → the estimate accuracy consumer (docs/decisions.md § Estimate
   * accuracy): a second event source mapping, invoked only for reservations leaving ACTIVE, in
   * batches of up to 1,000 gathered for up to 30 s (statistics: fewer, larger batches are fewer
   * writes). The stream's second reader, the most AWS recommends per shard. A batch that keeps
   * failing is dropped after 5 tries or an hour, logged: a few settlements missing from the
   * statistics, never a ledger.
   */
  private estimateAccuracyConsumer(props: JobsStackProps): ServiceFunction {
    const fn = new ServiceFunction(this, 'EstimateAccuracyConsumer', {
      ...functionLogs(props),
      entry: estimateAccuracyConsumer.entry,
      description:
        'aggregates how good the estimates of settled reservations were, per budget and kind',
      ...sizingOf(estimateAccuracyConsumer),
      environment: commonEnvironment(props),
    });
    fn.grantTable(props.table, estimateAccuracyConsumer.table);
    fn.grantStreamRead(props.table);
    const streamArn = props.table.tableStreamArn;
    if (!streamArn) throw new Error('estimate accuracy needs the table stream (DataStack)');
    fn.addEventSourceMapping('TableStream', {
      eventSourceArn: streamArn,
      startingPosition: StartingPosition.TRIM_HORIZON,
      batchSize: 1_000,
      maxBatchingWindow: Duration.seconds(30),
      reportBatchItemFailures: true,
      retryAttempts: 5,
      maxRecordAge: Duration.hours(1),
      filters: [
        FilterCriteria.filter({
          eventName: FilterRule.isEqual('MODIFY'),
          dynamodb: {
            NewImage: {
              type: { S: FilterRule.isEqual(EVENT_ITEM_TYPES.reservation) },
              status: { S: ['COMMITTED', 'RELEASED', 'EXPIRED'] },
            },
            OldImage: { status: { S: ['ACTIVE'] } },
          },
        }),
      ],
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
  private budgetEventsConsumer(props: JobsStackProps): ServiceFunction {
    const webhookUrls = props.webhookUrls ?? [];
    const webhookSecret =
      webhookUrls.length > 0
        ? new Secret(this, 'WebhookSecret', {
            description: 'Signs the webhook deliveries of budget events (X-Cycles-Signature)',
            generateSecretString: { passwordLength: 48, excludePunctuation: true },
            removalPolicy: props.ephemeral ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
          })
        : undefined;
    if (webhookSecret) {
      Validations.of(webhookSecret).acknowledge({
        id: 'AwsSolutions-SMG4',
        reason:
          'every receiver verifies deliveries with this key: a scheduled rotation would break their checks; rotate it by hand together with the receivers (docs/deploy.md § Budget events)',
      });
    }
    const fn = new ServiceFunction(this, 'BudgetEventsConsumer', {
      ...functionLogs(props),
      entry: budgetEventsConsumer.entry,
      description: 'derives budget events from the table stream and puts them on the bus',
      ...sizingOf(budgetEventsConsumer),
      environment: {
        ...commonEnvironment(props),
        EVENT_BUS_NAME: props.eventBus.eventBusName,
        ...(webhookSecret && {
          WEBHOOK_URLS: webhookUrls.join(','),
          WEBHOOK_SECRET_ID: webhookSecret.secretArn,
        }),
      },
    });
    fn.grantTable(props.table, budgetEventsConsumer.table);
    fn.grantStreamRead(props.table);
    props.eventBus.grantPutEventsTo(fn);
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
        // Refunds' audit records: custom.refund.
        FilterCriteria.filter({
          eventName: FilterRule.isEqual('INSERT'),
          dynamodb: {
            NewImage: {
              ...type(EVENT_ITEM_TYPES.audit),
              action: { S: [...EVENT_ITEM_TYPES.refundActions] },
            },
          },
        }),
      ],
    });
    if (webhookSecret) {
      new CfnOutput(this, 'WebhookSecretId', {
        value: webhookSecret.secretArn,
        description: 'aws secretsmanager get-secret-value --secret-id <this>: the webhook key',
      });
    }
    return fn;
  }
}
