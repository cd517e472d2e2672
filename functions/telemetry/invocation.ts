import { AsyncLocalStorage } from 'node:async_hooks';
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
  /** The caller, once authenticated: metrics recorded without a tenant are the caller's. */
  tenant?: string;
  keyId?: string;
  dynamoCalls: number;
  dynamoRetries: number;
  conflictRetries: number;
  readonly points: MetricPoint[];
}

const storage = new AsyncLocalStorage<Invocation>();

/** Runs `fn` as one invocation; everything it awaits records into the same Invocation. */
export function runInvocation<T>(requestId: string, fn: (invocation: Invocation) => T): T {
  const invocation: Invocation = {
    requestId,
    startedAt: performance.now(),
    dynamoCalls: 0,
    dynamoRetries: 0,
    conflictRetries: 0,
    points: [],
  };
  return storage.run(invocation, fn, invocation);
}

export const currentInvocation = (): Invocation | undefined => storage.getStore();

/** One DynamoDB command, sent `attempts` times by the SDK (the store client's middleware). */
export function noteDynamoCall(attempts: number): void {
  const invocation = storage.getStore();
  if (!invocation) return;
  invocation.dynamoCalls++;
  invocation.dynamoRetries += Math.max(0, attempts - 1);
}

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
