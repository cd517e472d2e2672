import {
  ArnFormat,
  CfnOutput,
  Duration,
  RemovalPolicy,
  Stack,
  type StackProps,
  Validations,
} from 'aws-cdk-lib';
import {
  AttributeType,
  BillingMode,
  ProjectionType,
  StreamViewType,
  Table,
} from 'aws-cdk-lib/aws-dynamodb';
import { EventBus } from 'aws-cdk-lib/aws-events';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import { adminKeyRotation } from '../functions/routes.js';
import { tableDefinition } from '../functions/store/table.js';
import { ServiceFunction } from './service-function.js';

export interface DataStackProps extends StackProps {
  /**
   * A throw-away stack (tests, previews): the table and the generated admin key are deleted
   * with the stack, and neither the table nor the stack has deletion protection.
   * @default false
   */
  readonly ephemeral?: boolean;
  /**
   * Name of an existing Secrets Manager secret that holds the admin key (you rotate it).
   * @default - the stack creates a secret with a generated 48-character key, rotated on a schedule
   */
  readonly adminApiKeySecretName?: string;
  /** How often the generated admin key is rotated. @default Duration.days(30) */
  readonly adminKeyRotation?: Duration;
  /** X-Ray tracing of the rotation function. @default true */
  readonly tracing?: boolean;
  /** Its logs. @default RetentionDays.ONE_MONTH */
  readonly logRetention?: RetentionDays;
}

/** A secret as functions see it: what its *_SECRET_ID variable holds, and what to grant. */
export interface SecretRef {
  /** The secret's ARN, or its name when referenced. */
  readonly secretId: string;
  /** The one resource GetSecretValue is granted on. */
  readonly policyArn: string;
}

/**
 * What outlives every deployment of the code: the table (RETAIN, a stable logical id: a
 * deployed table is never replaced), the admin and cursor keys, and the budget events bus that
 * your own rules are attached to. The other stacks come and go around it.
 */
export class DataStack extends Stack {
  readonly table: Table;
  readonly adminApiKey: SecretRef;
  /** HMAC key of pagination cursors: random per deployment, never derived from a public value. */
  readonly cursorSecret: SecretRef;
  /** Where budget events go: route them with ordinary EventBridge rules (README). */
  readonly eventBus: EventBus;

  constructor(scope: Construct, id: string, props: DataStackProps = {}) {
    const ephemeral = props.ephemeral ?? false;
    super(scope, id, { terminationProtection: !ephemeral, ...props });
    const removalPolicy = ephemeral ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;
    const string = (name: string) => ({ name, type: AttributeType.STRING });

    // No tableName: a generated physical name lets a replacement or a second stack coexist.
    this.table = new Table(this, 'Table', {
      partitionKey: string(tableDefinition.partitionKey),
      sortKey: string(tableDefinition.sortKey),
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: !ephemeral,
      removalPolicy,
      // Only idempotency records carry it; DynamoDB deletes them when due.
      timeToLiveAttribute: tableDefinition.timeToLiveAttribute,
      // Budget events are derived from it (the jobs stack's consumer, docs/decisions.md).
      stream: StreamViewType[tableDefinition.stream],
    });
    for (const index of tableDefinition.indexes) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: string(index.partitionKey),
        sortKey: string(index.sortKey),
        projectionType: ProjectionType[index.projection],
      });
    }

    this.adminApiKey = props.adminApiKeySecretName
      ? {
          secretId: props.adminApiKeySecretName,
          // Secrets Manager appends six random characters to a secret's name in its ARN.
          policyArn: this.formatArn({
            service: 'secretsmanager',
            resource: 'secret',
            resourceName: `${props.adminApiKeySecretName}-??????`,
            arnFormat: ArnFormat.COLON_RESOURCE_NAME,
          }),
        }
      : this.generatedAdminApiKey(removalPolicy, props);

    const cursorSecret = new Secret(this, 'CursorSecret', {
      description: 'HMAC key that signs pagination cursors of the budget reservation service',
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
      removalPolicy,
    });
    Validations.of(cursorSecret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'only the functions ever hold this HMAC key (it signs page cursors, it is never shown to anyone); rotating it would only break the cursors of pages being read. Rotate by hand if it leaks: put a new value, cursors issued before fail with 400',
    });
    this.cursorSecret = { secretId: cursorSecret.secretArn, policyArn: cursorSecret.secretArn };

    this.eventBus = new EventBus(this, 'BudgetEvents', {
      description: 'Budget events: thresholds, exhaustion, debt, over limit, expiries, refusals',
    });

    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'AdminApiKeySecretId', {
      value: this.adminApiKey.secretId,
      description: 'aws secretsmanager get-secret-value --secret-id <this> reads the admin key',
    });
    new CfnOutput(this, 'EventBusName', {
      value: this.eventBus.eventBusName,
      description: 'The bus budget events are put on (source budget-reservations)',
    });
  }

  /**
   * The admin key, generated by Secrets Manager at deploy time (it never appears in the
   * template) and rotated on a schedule by a small function that puts a new random value. The
   * functions accept the value it replaced (AWSPREVIOUS) too, so nobody is locked out by a
   * rotation: operators have until the next one to pick up the new key (README § Rotation).
   */
  private generatedAdminApiKey(removalPolicy: RemovalPolicy, props: DataStackProps): SecretRef {
    const secret = new Secret(this, 'AdminApiKey', {
      description: 'X-Admin-API-Key of the budget reservation service',
      generateSecretString: { passwordLength: 48, excludePunctuation: true },
      removalPolicy,
    });
    const rotation = new ServiceFunction(this, 'AdminKeyRotation', {
      entry: adminKeyRotation.entry,
      description: 'rotates the admin key: a new random value, the old one kept as AWSPREVIOUS',
      memorySize: adminKeyRotation.memoryMb,
      timeout: Duration.seconds(adminKeyRotation.timeoutSeconds),
      ...(props.tracing !== undefined && { tracing: props.tracing }),
      ...(props.logRetention !== undefined && { logRetention: props.logRetention }),
      logRemovalPolicy: removalPolicy,
    });
    secret.addRotationSchedule('Rotation', {
      rotationLambda: rotation,
      automaticallyAfter: props.adminKeyRotation ?? Duration.days(30),
      // The key read right after a deploy stays current until the first scheduled rotation.
      rotateImmediatelyOnUpdate: false,
    });
    if (!rotation.role) throw new Error('a ServiceFunction always has its own role');
    Validations.of(rotation.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        "CDK's rotation schedule grants secretsmanager:GetRandomPassword, which has no resource-level permissions (the function makes its keys with node:crypto); with tracing, X-Ray's two actions likewise",
    });
    return { secretId: secret.secretArn, policyArn: secret.secretArn };
  }
}
