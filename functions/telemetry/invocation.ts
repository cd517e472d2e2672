import { AsyncLocalStorage } from 'node:async_hooks';
import type { Trace } from '../domain/trace.js';
import type { DimensionsOf, MetricName } from './catalog.js';

/** One value of a metric, recorded during an invocation and published when it ends. */
export interface MetricPoint {
  readonly name: MetricName;
  readonly value: number;
  readonly dimensions: Readonly<Record<string, string>>;
  readonly tenant?: string | undefined;
}

/**
 * What one invocation (an HTTP request, a sweeper pass) did, for its log line and its metrics.
 * Kept in AsyncLocalStorage, not in module state: the local server runs many requests of one
 * handler at once in one process, and the store's client middleware must count each request's
 * DynamoDB calls on that request.
 */
export interface Invocation {
  readonly requestId: string;
  readonly startedAt: number;
  /**
   * The request's W3C trace (http/serve.ts): echoed on the answer, and stamped on the audit
   * records, refusal records and webhook deliveries the request writes.
   */
  trace?: Trace;
  /** The caller, once authenticated: metrics recorded without a tenant are the caller's. */
  tenant?: string;
  keyId?: string;
  dynamoCalls: number;
  dynamoRetries: number;
  /** Milliseconds spent waiting on DynamoDB, and each call as `<operation> <ms>` (the first 20). */
  dynamoMs: number;
  readonly dynamoOps: string[];
  conflictRetries: number;
  readonly points: MetricPoint[];
  /**
   * `performance.now()` past which the request starts no new DynamoDB call of a retry loop
   * (functions/deadline.ts); absent: no deadline but the loops' own bounds.
   */
  deadlineAt?: number;
}

const storage = new AsyncLocalStorage<Invocation>();

/** Runs `fn` as one invocation; everything it awaits records into the same Invocation. */
export function runInvocation<T>(requestId: string, fn: (invocation: Invocation) => T): T {
  const invocation: Invocation = {
    requestId,
    startedAt: performance.now(),
    dynamoCalls: 0,
    dynamoRetries: 0,
    dynamoMs: 0,
    dynamoOps: [],
    conflictRetries: 0,
    points: [],
  };
  return storage.run(invocation, fn, invocation);
}

export const currentInvocation = (): Invocation | undefined => storage.getStore();

/** The trace of the request being served, if any. */
export const currentTrace = (): Trace | undefined => storage.getStore()?.trace;

/**
 * One DynamoDB command, sent `attempts` times by the SDK and answered (or given up on) after
 * `ms`, all retries included (the store client's middleware).
 */
export function noteDynamoCall(attempts: number, command = 'Command', ms = 0): void {
  const invocation = storage.getStore();
  if (!invocation) return;
  invocation.dynamoCalls++;
  invocation.dynamoRetries += Math.max(0, attempts - 1);
  invocation.dynamoMs += ms;
  if (invocation.dynamoOps.length < 20) {
    invocation.dynamoOps.push(`${command.replace(/Command$/, '')} ${round(ms)}`);
  }
}

const round = (ms: number) => Math.round(ms * 10) / 10;

/**
 * What an invocation's log line says of its DynamoDB calls: how many, retried how often, the
 * time spent waiting on them and each call's operation and milliseconds: a slow request shows
 * which call was slow (docs/decisions.md § Tracing).
 */
export const dynamoFields = (invocation: Invocation) => ({
  dynamodb_calls: invocation.dynamoCalls,
  dynamodb_retries: invocation.dynamoRetries,
  dynamodb_ms: round(invocation.dynamoMs),
  ...(invocation.dynamoOps.length > 0 && { dynamodb_ops: invocation.dynamoOps }),
  conflict_retries: invocation.conflictRetries,
});

export function noteConflictRetry(): void {
  const invocation = storage.getStore();
  if (invocation) invocation.conflictRetries++;
}

/**
 * Records a business metric (catalog.ts) on the current invocation; outside one (a script
 * calling a use case directly) it is dropped. `tenant` defaults to the caller's.
 */
export function recordMetric<M extends MetricName>(
  name: M,
  value: number,
  dimensions: DimensionsOf<M>,
  tenant?: string,
): void {
  const invocation = storage.getStore();
  if (!invocation) return;
  invocation.points.push({ name, value, dimensions, tenant: tenant ?? invocation.tenant });
}
