import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { config } from '../config/settings.js';
import { type BusyReason, RetryLaterError } from '../domain/errors.js';
import { noteDynamoCall } from '../telemetry/invocation.js';

/**
 * The one DynamoDB client of the process, created at cold start without any network I/O.
 * Keep-alive sockets: the SDK's default agent keeps connections open; we raise its socket cap
 * so concurrent requests of the local server do not queue behind 50 sockets.
 *
 * Every attempt has a deadline (connection included) and the attempts are few, so a stalled
 * table costs a request at most DYNAMODB_MAX_ATTEMPTS × DYNAMODB_ATTEMPT_TIMEOUT_MS plus the
 * SDK's backoff (3 × 1 s + at most 0.3 s by default), well inside the shortest function timeout
 * (5 s), and the caller gets SPEC's retryable 503 instead of API Gateway's own 500.
 */
const local = config.DYNAMODB_ENDPOINT !== undefined;

export const dynamoClient = new DynamoDBClient({
  region: config.AWS_REGION,
  ...(local && {
    endpoint: config.DYNAMODB_ENDPOINT,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  }),
  maxAttempts: config.DYNAMODB_MAX_ATTEMPTS,
  requestHandler: {
    connectionTimeout: config.DYNAMODB_CONNECT_TIMEOUT_MS,
    requestTimeout: config.DYNAMODB_ATTEMPT_TIMEOUT_MS,
    // Without it the SDK only logs a warning when requestTimeout passes, and waits on.
    throwOnRequestTimeout: true,
    httpAgent: { keepAlive: true, maxSockets: 256 },
    httpsAgent: { keepAlive: true, maxSockets: 256 },
  },
});

// The SDK's logger middleware redacts every request and response for a logger that prints
// nothing: measurable CPU per call (BENCHMARKS.md profile). Failures reach our own log anyway.
dynamoClient.middlewareStack.remove('loggerMiddleware');

/**
 * Throttling and plain-write conflicts that outlast the SDK's own retries (it retries
 * throttles, not conflicts) mean "nothing was done, try again shortly" (429 LIMIT_EXCEEDED); a
 * call that timed out on every attempt means "the table did not answer: try again", its outcome
 * unknown (a write may have landed, and the same idempotency key then replays it: 503). So does
 * TransactionInProgressException: the SDK sent a transaction again (same ClientRequestToken)
 * after an attempt timed out, and that attempt is still being applied. All are
 * RetryLaterError with Retry-After, never a 500. Outermost (initialize step), so it sees the
 * final error.
 */
const BUSY: Record<string, BusyReason> = {
  ProvisionedThroughputExceededException: 'THROTTLED',
  ThrottlingException: 'THROTTLED',
  RequestLimitExceeded: 'THROTTLED',
  TransactionConflictException: 'CONTENTION',
  TransactionInProgressException: 'TIMEOUT',
  // The SDK's own deadline (requestTimeout, connectionTimeout), and a socket the table dropped.
  TimeoutError: 'TIMEOUT',
  RequestTimeout: 'TIMEOUT',
  ECONNRESET: 'TIMEOUT',
  EPIPE: 'TIMEOUT',
};
const busyReason = (error: unknown): BusyReason | undefined => {
  if (!(error instanceof Error)) return undefined;
  return BUSY[error.name] ?? BUSY[(error as { code?: string }).code ?? ''];
};
dynamoClient.middlewareStack.add(
  (next) => async (args) => {
    try {
      return await next(args);
    } catch (error) {
      const reason = busyReason(error);
      if (reason)
        throw new RetryLaterError(reason, reason === 'TIMEOUT' ? 1_000 : 500, { cause: error });
      throw error;
    }
  },
  { step: 'initialize', name: 'busyAsRetryLater', priority: 'high' },
);

/**
 * Counts and times each command, with the attempts the SDK's retry strategy made for it, on the
 * current request (telemetry/invocation.ts): its log line and metrics report them, in place of
 * the X-Ray subsegments the tracer used to write (docs/decisions.md § Tracing). Inside
 * busyAsRetryLater, so it reads the SDK's own error.
 */
dynamoClient.middlewareStack.add(
  (next, context) => async (args) => {
    const startedAt = performance.now();
    const note = (result: unknown) =>
      noteDynamoCall(attemptsOf(result), context.commandName, performance.now() - startedAt);
    try {
      const output = await next(args);
      note(output.output);
      return output;
    } catch (error) {
      note(error);
      throw error;
    }
  },
  { step: 'initialize', name: 'countPerInvocation', priority: 'low' },
);

const attemptsOf = (value: unknown): number =>
  (value as { $metadata?: { attempts?: number } } | undefined)?.$metadata?.attempts ?? 1;

export const documentClient = DynamoDBDocumentClient.from(dynamoClient, {
  marshallOptions: { removeUndefinedValues: true },
});

export const tableName = (): string => config.TABLE_NAME;
