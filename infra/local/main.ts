/**
 * `npm start`: DynamoDB Local (persisted under .data/ unless --in-memory), the table, the
 * runtime server on 7878, the admin server on 7979 and the expiry sweeper on its interval.
 */
import { watchLauncher } from './launcher.js';
import { type LocalStack, startLocalStack } from './stack.js';

// The pinned SDK supports Node 20; its notice about future releases is noise for a local run.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

// Metrics are CloudWatch's business: locally they would be three JSON documents per request and
// one per idle sweep, burying the one log line per request. POWERTOOLS_METRICS_DISABLED=false
// prints them (the EMF documents Lambda writes).
if (!process.env.POWERTOOLS_METRICS_DISABLED) process.env.POWERTOOLS_METRICS_DISABLED = 'true';

const inMemory = process.argv.includes('--in-memory');

let stack: LocalStack | undefined;
let stopping = false;
const shutdown = async (reason: string) => {
  if (stopping) return;
  stopping = true;
  console.log(`${reason}, shutting down`);
  // Should stopping hang, exit anyway: the exit hook still has DynamoDB Local stopped.
  setTimeout(() => process.exit(1), 10_000).unref();
  await stack?.stop();
  process.exit(0);
};
process.on('SIGINT', () => void shutdown('received SIGINT'));
process.on('SIGTERM', () => void shutdown('received SIGTERM'));
// SIGTERM to `npm start` reaches only its shell, not us: npm going away must stop us too.
watchLauncher((what) => void shutdown(`${what} exited`));

try {
  // EMULATE_CONTENTION=1 (or settings, e.g. hold_ms=13,latency_ms=0): DynamoDB's conflicts
  // and throttling on DynamoDB Local (docs/contention-emulator.md). Local runner only.
  const setting = process.env.EMULATE_CONTENTION;
  const contention = setting
    ? (await import('./contention.js')).contentionSettingsFromText(setting)
    : undefined;
  // The operator console's files in console/dist, rebuilt when their sources changed (a second,
  // offline), unless CONSOLE_DIR names a build of one's own.
  if (!process.env.CONSOLE_DIR) await (await import('../build-console.js')).ensureConsole();
  stack = await startLocalStack({ inMemory, announce: true, contention });
} catch (error) {
  console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
