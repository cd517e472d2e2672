import { randomUUID } from 'node:crypto';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { localClient } from '../../infra/local/dynamodb.js';
import type { LocalStack } from '../../infra/local/stack.js';
import type { TestClock } from './clock.js';

export interface TestStackOptions {
  /** Environment for the function modules (they read their configuration once, at import). */
  readonly env?: Record<string, string>;
  /** Server time for every handler and the sweeper (default: the system clock). */
  readonly clock?: TestClock;
}

/**
 * The local stack (both servers, real sockets) in this test file's process, on its own table of
 * the shared DynamoDB Local. Files are isolated module graphs, so each reads its own config.
 * Most files want `useTestStack`, which also starts and stops it and audits the ledgers.
 */
export async function startTestStack({
  env = {},
  clock,
}: TestStackOptions = {}): Promise<LocalStack> {
  const endpoint = inject('dynamoEndpoint');
  if (!/^http:\/\/(127\.0\.0\.1|localhost):\d+$/.test(endpoint))
    throw new Error(`not a local endpoint: ${endpoint}`);
  await untilAnswers(endpoint);
  Object.assign(process.env, {
    DYNAMODB_ENDPOINT: endpoint,
    TABLE_NAME: `test-${randomUUID().slice(0, 8)}`,
    ADMIN_API_KEY: ADMIN_KEY,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    API_KEY_CACHE_TTL_MS: '0',
    ...env,
  });
  const { startLocalStack } = await import('../../infra/local/stack.js');
  return startLocalStack({
    runtimePort: 0,
    adminPort: 0,
    sweeper: false,
    ...(clock && { clock: clock.now }),
  });
}

/** DynamoDB Local boots while the first test files run (global-setup.ts): waits for it. */
async function untilAnswers(endpoint: string): Promise<void> {
  const client = localClient(endpoint);
  const deadline = Date.now() + 45_000;
  try {
    for (;;) {
      try {
        await client.send(new ListTablesCommand({}));
        return;
      } catch (error) {
        if (Date.now() > deadline)
          throw new Error(`DynamoDB Local does not answer at ${endpoint}: ${String(error)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    client.destroy();
  }
}

export const ADMIN_KEY = 'test-admin-key';
