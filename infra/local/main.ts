/**
 * `npm start`: DynamoDB Local (persisted under .data/ unless --in-memory), the table, the
 * runtime server on 7878, the admin server on 7979 and the expiry sweeper on its interval.
 */
import { startLocalStack } from './stack.js';

// The pinned SDK supports Node 20; its notice about future releases is noise for a local run.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const inMemory = process.argv.includes('--in-memory');

try {
  const stack = await startLocalStack({ inMemory, announce: true });
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`received ${signal}, shutting down`);
    await stack.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
} catch (error) {
  console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
