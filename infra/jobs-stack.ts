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
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { FilterCriteria, FilterRule, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { type ISecret, RotationSchedule, Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import {
  adminKeyRotation,
  estimateAccuracyConsumer,
  streamEventsConsumer,
  sweeper,
  webhookDelivery,
} from '../functions/routes.js';
import { EVENT_ITEM_TYPES } from '../functions/store/table.js';
import { commonEnvironment, type FunctionDefaults, functionLogs, sizingOf } from './api-stack.js';
import { ServiceFunction } from './service-function.js';

export interface JobsStackProps extends StackProps, FunctionDefaults {
  /** The bus budget events are put on (the data stack's). */
  readonly eventBus: IEventBus;
  /** The key that seals webhook secrets (the data stack's). */
  readonly webhookKey: IKey;
  /** Delivery function invocations at once, from the queue. @default 20 */
  readonly deliveryConcurrency?: number;
  /** EXPIRY_SWEEP_INTERVAL_MS of the sweeper. @default Duration.seconds(5) */
  readonly sweepInterval?: Duration;
  /**
   * Reserve concurrency 1 for the sweeper. Lambda keeps 100 of an account's concurrency
   * unreserved, so accounts still at the new-account quota of 10 must set this to false.
   * @default true
   */
  readonly reserveSweeperConcurrency?: boolean;
  /**
   * URLs that get an operator (`__system__`) subscription to every event, created by the events
   * consumer on its first batch, signed with a secret the stack generates (output
   * `WebhookSecretId`). The bus gets every event regardless.
   * @default - none: subscriptions are made through the API
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
  /** One message per webhook delivery (its record is in the table). */
  readonly deliveryQueue: Queue;
  readonly deliveryDlq: Queue;
  /** Makes every delivery attempt, and /test probes: the one function that opens secrets. */
  readonly webhookDelivery: ServiceFunction;

  constructor(scope: Construct, id: string, props: JobsStackProps) {
    super(scope, id, props);
    this.sweeper = this.expirySweeper(props);
    this.deliveryDlq = new Queue(this, 'WebhookDeliveryDlq', {
      retentionPeriod: Duration.days(14),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    Validations.of(this.deliveryDlq).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'this queue is itself a dead-letter queue: delivery messages the delivery function kept failing on (docs/deploy.md § Events and webhooks); their deliveries stay findable on the due index',
    });
    this.deliveryQueue = new Queue(this, 'WebhookDeliveries', {
      // Above the function's timeout; a retry sets its own visibility (the retry delay).
      visibilityTimeout: Duration.seconds(6 * webhookDelivery.timeoutSeconds),
      retentionPeriod: Duration.days(4),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // A message comes back once per retry (≤ 11 attempts) and after a crash: past 20 it is
      // poison, not a failing receiver (whose deliveries end FAILED in the table).
      deadLetterQueue: { queue: this.deliveryDlq, maxReceiveCount: 20 },
    });
    this.webhookDelivery = this.deliveryFunction(props);
    this.budgetEventsDlq = new Queue(this, 'BudgetEventsDlq', {
      retentionPeriod: Duration.days(14),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    Validations.of(this.budgetEventsDlq).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'this queue is itself a dead-letter queue: the on-failure destination of the stream mapping (docs/deploy.md § Events and webhooks); nothing consumes it to need one',
    });
    this.budgetEvents = this.eventsConsumer(props);
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
   * The delivery queue → the delivery function: batches of up to 10 delivery messages, their
   * attempts made side by side (a hanging receiver holds only its own), at most
   * `deliveryConcurrency` invocations at once, partial batch failures for the retries (each made
   * visible again after its delay). It alone may Decrypt with the webhook key, and only under a
   * subscription's encryption context.
   */
  private deliveryFunction(props: JobsStackProps): ServiceFunction {
    const fn = new ServiceFunction(this, 'WebhookDelivery', {
      ...functionLogs(props),
      entry: webhookDelivery.entry,
      description: 'makes webhook delivery attempts (and /test probes), records each one',
      ...sizingOf(webhookDelivery),
      environment: {
        ...commonEnvironment(props),
        WEBHOOK_QUEUE_URL: this.deliveryQueue.queueUrl,
        WEBHOOK_KMS_KEY_ID: props.webhookKey.keyArn,
      },
    });
    fn.grantTable(props.table, webhookDelivery.table);
    fn.grantSealing(props.webhookKey.keyArn, 'kms:Decrypt');
    fn.addEventSource(
      new SqsEventSource(this.deliveryQueue, {
        batchSize: 10,
        reportBatchItemFailures: true,
        maxConcurrency: props.deliveryConcurrency ?? 20,
      }),
    );
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
   * The table's stream → the events consumer → the event log, the bus and the delivery queue.
   * Only items that can mean an event invoke it (filters on the stream records), in batches;
   * a failing batch is bisected, the consumer reports the record to retry from, and what still
   * fails after 10 tries (or a day) is dropped to the DLQ, so one poison record never holds
   * the stream.
   */
  private eventsConsumer(props: JobsStackProps): ServiceFunction {
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
          'every receiver verifies deliveries with this key: a scheduled rotation would break their checks; rotate it by PATCHing the subscriptions signing_secret, together with the receivers (docs/deploy.md § Events and webhooks)',
      });
    }
    // Construct id kept from when it derived budget events alone: the function is not replaced.
    const fn = new ServiceFunction(this, 'BudgetEventsConsumer', {
      ...functionLogs(props),
      entry: streamEventsConsumer.entry,
      description:
        'derives events from the table stream: logs them, puts them on the bus, queues deliveries',
      ...sizingOf(streamEventsConsumer),
      environment: {
        ...commonEnvironment(props),
        EVENT_BUS_NAME: props.eventBus.eventBusName,
        WEBHOOK_QUEUE_URL: this.deliveryQueue.queueUrl,
        ...(webhookSecret && {
          WEBHOOK_URLS: webhookUrls.join(','),
          WEBHOOK_SECRET_ID: webhookSecret.secretArn,
          WEBHOOK_KMS_KEY_ID: props.webhookKey.keyArn,
        }),
      },
    });
    fn.grantTable(props.table, streamEventsConsumer.table);
    fn.grantStreamRead(props.table);
    props.eventBus.grantPutEventsTo(fn);
    this.deliveryQueue.grantSendMessages(fn);
    if (webhookSecret) {
      // The bootstrap subscriptions: their secret read, then sealed.
      fn.grantSecretRead(webhookSecret.secretArn);
      fn.grantSealing(props.webhookKey.keyArn, 'kms:Encrypt');
    }
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
        // Ledger writes (usage, debt), reservations ending (expired; committed over estimate),
        // refusal records, audit records (admin changes' lifecycle events).
        FilterCriteria.filter({
          eventName: FilterRule.isEqual('MODIFY'),
          dynamodb: { NewImage: type(...EVENT_ITEM_TYPES.ledgers) },
        }),
        FilterCriteria.filter({
          eventName: FilterRule.isEqual('MODIFY'),
          dynamodb: {
            NewImage: {
              ...type(EVENT_ITEM_TYPES.reservation),
              status: { S: [...EVENT_ITEM_TYPES.reservationStatuses] },
            },
          },
        }),
        FilterCriteria.filter({
          eventName: FilterRule.isEqual('INSERT'),
          dynamodb: { NewImage: type(EVENT_ITEM_TYPES.refusal, EVENT_ITEM_TYPES.audit) },
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
