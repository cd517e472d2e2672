import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import type { ContentionSettings } from '../../infra/local/contention.js';
import type { LocalStack } from '../../infra/local/stack.js';
import type { TestClock } from './clock.js';
import { holdToDocuments } from './http.js';

export interface TestStackOptions {
  /** Environment for the function modules (they read their configuration once, at import). */
  readonly env?: Record<string, string>;
  /** Server time for every handler and the sweeper (default: the system clock). */
  readonly clock?: TestClock;
  /** The contention emulator on the servers' DynamoDB client (infra/local/contention.ts). */
  readonly contention?: Partial<ContentionSettings>;
}

/**
 * The local stack (both servers, real sockets) in this test file's process, on its own table of
 * the shared DynamoDB Local. Files are isolated module graphs, so each reads its own config.
 * Most files want `useTestStack`, which also starts and stops it and audits the ledgers.
 */
export async function startTestStack({
  env = {},
  clock,
  contention,
}: TestStackOptions = {}): Promise<LocalStack> {
  const endpoint = inject('dynamoEndpoint');
  if (!/^http:\/\/(127\.0\.0\.1|localhost):\d+$/.test(endpoint))
    throw new Error(`not a local endpoint: ${endpoint}`);
  Object.assign(process.env, {
    DYNAMODB_ENDPOINT: endpoint,
    TABLE_NAME: `test-${randomUUID().slice(0, 8)}`,
    ADMIN_API_KEY: ADMIN_KEY,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    // No EMF documents on stdout either; test/integration/observability.test.ts turns them on.
    POWERTOOLS_METRICS_DISABLED: process.env.TEST_METRICS_DISABLED ?? 'true',
    API_KEY_CACHE_TTL_MS: '0',
    // Events read the table's stream: only the files that test them turn it on (DynamoDB Local
    // keeps every stream record in memory, and the suite shares one).
    EVENTS_ENABLED: 'false',
    // No stream on the shared DynamoDB Local unless a file reads it (docs/decisions.md §
    // Estimate accuracy): test/integration/accuracy.test.ts turns it on.
    ESTIMATE_ACCURACY: 'false',
    ...env,
  });
  const { startLocalStack } = await import('../../infra/local/stack.js');
  const stack = await startLocalStack({
    runtimePort: 0,
    adminPort: 0,
    sweeper: false,
    ...(clock && { clock: clock.now }),
    ...(contention && { contention }),
  });
  holdToDocuments({ runtime: stack.runtimeUrl, admin: stack.adminUrl });
  return stack;
}

export const ADMIN_KEY = 'test-admin-key';
