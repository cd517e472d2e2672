import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { config } from '../config/settings.js';

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

export const documentClient = DynamoDBDocumentClient.from(dynamoClient, {
  marshallOptions: { removeUndefinedValues: true },
});

export const tableName = (): string => config.TABLE_NAME;
