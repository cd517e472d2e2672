import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { config } from '../config/settings.js';
import { RetryLaterError } from '../domain/errors.js';
import { noteDynamoCall } from '../telemetry/invocation.js';
import { captureClient } from '../telemetry/tracing.js';

/**
 * The one DynamoDB client of the process, created at cold start without any network I/O.
 * Keep-alive sockets: the SDK's default agent keeps connections open; we raise its socket cap
 * so concurrent requests of the local server do not queue behind 50 sockets.
 */
const local = config.DYNAMODB_ENDPOINT !== undefined;

export const dynamoClient = new DynamoDBClient({
  region: config.AWS_REGION,
  ...(local && {
    endpoint: config.DYNAMODB_ENDPOINT,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  }),
  maxAttempts: 4,
  requestHandler: {
    httpAgent: { keepAlive: true, maxSockets: 256 },
    httpsAgent: { keepAlive: true, maxSockets: 256 },
  },
});

// The SDK's logger middleware redacts every request and response for a logger that prints
// nothing: measurable CPU per call (BENCHMARKS.md profile). Failures reach our own log anyway.
dynamoClient.middlewareStack.remove('loggerMiddleware');

/**
 * Throttling and plain-write conflicts that outlast the SDK's own retries (it retries
 * throttles, not conflicts) mean "nothing was done, try again shortly": RetryLaterError, answered
 * 503 with Retry-After, never a 500. Outermost (initialize step), so it sees the final error.
 */
const BUSY: Record<string, 'THROTTLED' | 'CONTENTION'> = {
  ProvisionedThroughputExceededException: 'THROTTLED',
  ThrottlingException: 'THROTTLED',
  RequestLimitExceeded: 'THROTTLED',
  TransactionConflictException: 'CONTENTION',
  TransactionInProgressException: 'CONTENTION',
};
dynamoClient.middlewareStack.add(
  (next) => async (args) => {
    try {
      return await next(args);
    } catch (error) {
      const reason = error instanceof Error ? BUSY[error.name] : undefined;
      if (reason) throw new RetryLaterError(reason, 500, { cause: error });
      throw error;
    }
  },
  { step: 'initialize', name: 'busyAsRetryLater', priority: 'high' },
);

/**
 * Counts each command, and the attempts the SDK's retry strategy made for it, on the current
 * request (telemetry/invocation.ts): its log line and metrics report them. Inside
 * busyAsRetryLater, so it reads the SDK's own error.
 */
dynamoClient.middlewareStack.add(
  (next) => async (args) => {
    try {
      const output = await next(args);
      noteDynamoCall(attemptsOf(output.output));
      return output;
    } catch (error) {
      noteDynamoCall(attemptsOf(error));
      throw error;
    }
  },
  { step: 'initialize', name: 'countPerInvocation', priority: 'low' },
);

const attemptsOf = (value: unknown): number =>
  (value as { $metadata?: { attempts?: number } } | undefined)?.$metadata?.attempts ?? 1;

// X-Ray subsegments for every call when tracing is on (the document client shares this stack).
captureClient(dynamoClient);

export const documentClient = DynamoDBDocumentClient.from(dynamoClient, {
  marshallOptions: { removeUndefinedValues: true },
});

export const tableName = (): string => config.TABLE_NAME;
