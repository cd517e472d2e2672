import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import type { LocalStack } from '../../infra/local/stack.js';
import { balancesOf, expectBalance } from './balances.js';
import { type GivenTenant, newTenantsOn } from './fixtures.js';
import { startTestStack, type TestStackOptions } from './stack.js';

/**
 * This file's local stack (startTestStack: both servers on real sockets, its own table on the
 * shared DynamoDB Local), started before its tests and stopped after them. The returned stack is
 * usable from the first hook on.
 *
 * The ledger audit: every ledger of each tenant `givenTenant` made must satisfy SPEC's Balance
 * invariants (`expectBalance`), read with the tenant's auditor key. A test's tenants are audited
 * in afterEach, once no other test of the file is running (under describe.concurrent, after the
 * last test of the batch), so the audit sees them as their tests left them. Tenants made in
 * hooks, which several tests share, are audited before the first test that follows, and again
 * in afterAll. Each ledger is one item updated atomically, so the invariants hold at any
 * instant, also while other tests run. Tenants of a stopped stack are not audited.
 */
export function useTestStack(options: TestStackOptions = {}): LocalStack {
  let started: LocalStack | undefined;
  let stopped = false;
  const current = () => {
    if (!started)
      throw new Error('the test stack is started in beforeAll: use it in hooks or tests');
    return started;
  };
  const stack: LocalStack = {
    get runtimeUrl() {
      return current().runtimeUrl;
    },
    get adminUrl() {
      return current().adminUrl;
    },
    get dynamoEndpoint() {
      return current().dynamoEndpoint;
    },
    get deliveries() {
      return current().deliveries;
    },
    async stop() {
      stopped = true;
      await current().stop();
    },
  };
  const audit = async (tenants: readonly GivenTenant[]) => {
    if (!stopped) await inBatches(tenants, (t) => auditLedgers(stack, t));
  };
  /** Tenants made in hooks, shared by the tests that follow. */
  const shared: GivenTenant[] = [];
  let running = 0;

  beforeAll(async () => {
    started = await startTestStack(options);
  });
  beforeEach(async () => {
    if (running++ > 0) return;
    const made = newTenantsOn(stack);
    shared.push(...made);
    await audit(made);
  });
  afterEach(async () => {
    if (--running > 0) return;
    await audit(newTenantsOn(stack));
  });
  afterAll(async () => {
    if (!started) return;
    try {
      await audit(newTenantsOn(stack));
      await audit(shared);
    } finally {
      if (!stopped) await stack.stop();
    }
  });
  return stack;
}

/** Every ledger of the tenant, read with its auditor key, satisfies SPEC's Balance invariants. */
async function auditLedgers(stack: LocalStack, t: GivenTenant): Promise<void> {
  for (const b of (await balancesOf(stack, t, t.auditor)).values()) {
    expectBalance(
      b,
      `ledger audit, tenant ${t.tenant}, ${String(b.scope)}#${String((b.allocated as { unit: string }).unit)}`,
    );
  }
}

/** Runs `task` over `items`, eight at a time. */
async function inBatches<T>(items: readonly T[], task: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += 8) await Promise.all(items.slice(i, i + 8).map(task));
}
