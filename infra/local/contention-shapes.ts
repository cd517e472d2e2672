/**
 * Today's service as the contention simulator sees it: the reserve and commit transactions of
 * one tenant budget, built by the store's own pure builders and turned into item writes by the
 * same generic extraction the live emulator uses (keys from Put.Item / Update.Key /
 * ConditionCheck.Key, index keys from the table definition). When the builders change (sharded
 * ledgers, other items), the shapes follow; what is written here by hand is only what a
 * request does around its transaction: how many reads come first, and its retry priority.
 */
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { Amount } from '../../functions/domain/amounts.js';
import { type Budget, budgetsByKey, type Ledger, SINGLE } from '../../functions/domain/budget.js';
import { emptyShards, respread } from '../../functions/domain/escrow.js';
import { derivedId, fingerprint } from '../../functions/domain/fingerprint.js';
import { holdChange, ledgersAfter } from '../../functions/domain/ledger.js';
import type { Reservation } from '../../functions/domain/reservation.js';
import { deriveScopes, type Subject } from '../../functions/domain/scopes.js';
import { commitChanges } from '../../functions/domain/settlement.js';
import type { TransactItem } from '../../functions/store/expressions.js';
import { reserveTransaction, settleTransaction } from '../../functions/store/reservation-writes.js';
import {
  CONFLICT_RETRY_BUDGET,
  conflictBackoffMs,
  type WritePriority,
} from '../../functions/store/transact.js';
import type { Reserved } from '../../functions/use-cases/reservations.js';
import type { Committed } from '../../functions/use-cases/settlements.js';
import {
  describeTransaction,
  ItemMemory,
  type ItemWrite,
  type OperationShape,
  type RetryPolicy,
} from './contention.js';

/** What a reserve and a commit each retry by. */
export interface PairPolicies {
  readonly reserve: RetryPolicy;
  readonly commit: RetryPolicy;
}

/** Today's `transact`: a reserve retries at `admit` priority, a commit at `settle`. */
export function servicePolicy(priority: WritePriority): RetryPolicy {
  const { retries, capMs } = CONFLICT_RETRY_BUDGET[priority];
  return {
    retries,
    retriesThrottling: true,
    backoffMs: (attempt, random) => conflictBackoffMs(attempt, capMs, random()),
  };
}

export const SERVICE_POLICIES: PairPolicies = {
  reserve: servicePolicy('admit'),
  commit: servicePolicy('settle'),
};

/**
 * `transact` until commit a472f41 (the policy the pre-change model figures assume, kept to
 * calibrate against them): every write retried a conflict 6 times with full-jitter backoff
 * min(400, 10·2^attempt) ms, then failed with 500; a throttled transaction failed at once.
 */
const legacy: RetryPolicy = {
  retries: 6,
  retriesThrottling: false,
  backoffMs: (attempt, random) => random() * Math.min(400, 10 * 2 ** attempt),
};
export const LEGACY_POLICIES: PairPolicies = { reserve: legacy, commit: legacy };

export type ScopeCount = 1 | 3;

const UNIT = 'USD_MICROCENTS';
const ESTIMATE = 1_000;
const ACTUAL = 800;
/** The subject whose scopes a pair holds: the tenant alone, or tenant / workspace / agent. */
const SUBJECTS: Record<ScopeCount, (tenant: string) => Subject> = {
  1: (tenant) => ({ tenant }),
  3: () => ({ workspace: 'w', agent: 'a' }),
};

/** A busy budget, so stored results (the balances in them) have their production size. */
const busyLedger = (scope: string): Ledger => ({
  scope,
  unit: UNIT,
  allocated: 1_000_000_000_000,
  spent: 123_456_800,
  reserved: 4_567_000,
  debt: 0,
  overdraftLimit: 0,
  remaining: 1_000_000_000_000 - 123_456_800 - 4_567_000,
});

/** The document client's marshalling (store/client.ts: removeUndefinedValues), per action. */
export function marshallTransactItems(items: readonly TransactItem[]): TransactWriteItem[] {
  const m = (value: Record<string, unknown> | undefined) =>
    value && marshall(value, { removeUndefinedValues: true });
  return items.map((entry) => {
    const [kind, action] = Object.entries(entry)[0] ?? [];
    const a = (action ?? {}) as Record<string, unknown>;
    const marshalled = {
      ...a,
      Item: m(a.Item as Record<string, unknown> | undefined),
      Key: m(a.Key as Record<string, unknown> | undefined),
      ExpressionAttributeValues: m(a.ExpressionAttributeValues as Record<string, unknown>),
    };
    // The same fields, now AttributeValues: the shape TransactWriteItems sends on the wire.
    return { [kind ?? 'ConditionCheck']: marshalled } as TransactWriteItem;
  });
}

/** A pair's budgets: the scopes it holds, each budget split into `shards` escrow shards. */
export interface PairBudgets {
  readonly scopes: ScopeCount;
  /** 1 (the default): unsharded budgets, one ledger item each. */
  readonly shards?: number | undefined;
}

/** The two transactions of one reserve → commit of `key`, as the use cases build them today. */
export function pairTransactions(
  tenant: string,
  budgets: PairBudgets,
  key: string,
  now = 1_800_000_000_000,
  attempt = 0,
): { readonly reserve: TransactItem[]; readonly commit: TransactItem[] } {
  const subject = SUBJECTS[budgets.scopes](tenant);
  const { scopes, scopePath } = deriveScopes(tenant, subject);
  const estimate: Amount = { unit: UNIT, amount: ESTIMATE };
  // As the use cases read them: a sharded budget's shards, its remaining split evenly (what it
  // holds and spent so far placed on shard 0).
  const count = budgets.shards ?? 1;
  const read = budgetsByKey(
    scopes.map((scope): Budget => {
      const { unit, overdraftLimit, ...counters } = busyLedger(scope);
      const sofar = { shard: 0, delta: { reserved: counters.reserved, spent: counters.spent } };
      const shards = respread(emptyShards(count), counters, sofar);
      return {
        ref: { scope, unit },
        counters,
        status: 'ACTIVE',
        overdraftLimit,
        layout: count > 1 ? { kind: 'sharded', shards, gated: false } : SINGLE,
      };
    }),
  );
  const reservation: Reservation = {
    reservationId: derivedId('rsv', tenant, key),
    tenant,
    status: 'ACTIVE',
    idempotencyKey: key,
    subject,
    action: { kind: 'llm.completion', name: 'simulated-model' },
    reserved: estimate,
    createdAtMs: now,
    expiresAtMs: now + 60_000,
    gracePeriodMs: 5_000,
    scopePath,
    holds: scopes.map((scope) => ({ scope, shard: 0 })),
    overagePolicy: 'REJECT',
    ttlMs: 60_000,
  };
  const holds = scopes.map((s) => holdChange(s, UNIT, ESTIMATE));
  const reserved: Reserved = {
    kind: 'reserved',
    affectedScopes: scopes,
    scopePath,
    reserved: estimate,
    reservationId: reservation.reservationId,
    expiresAtMs: reservation.expiresAtMs,
    balances: ledgersAfter(read, holds),
  };
  const reserve = reserveTransaction(
    {
      reservation,
      holds,
      outcome: { fingerprint: fingerprint({ key, subject }), result: reserved },
      budgets: read,
    },
    attempt,
  ).items;
  // The commit settles on the shards the holds took, as read back from the reservation record.
  const record = reserve.find((entry) => entry.Put?.Item?.type === 'reservation')?.Put?.Item;
  const holdShards = Array.isArray(record?.hold_shards) ? record.hold_shards.map(Number) : [];
  const held: Reservation = {
    ...reservation,
    holds: reservation.holds.map((h, i) => ({ ...h, shard: holdShards[i] ?? 0 })),
  };
  const actual: Amount = { unit: UNIT, amount: ACTUAL };
  const changes = commitChanges(held, actual, read);
  const committed: Committed = {
    status: 'COMMITTED',
    charged: actual,
    released: { unit: UNIT, amount: ESTIMATE - ACTUAL },
    balances: ledgersAfter(read, changes),
  };
  const commit = settleTransaction({
    reservation: held,
    to: 'COMMITTED',
    now: now + 1_000,
    changes,
    committed: actual,
    detail: {},
    idempotency: {
      scope: { tenant, operation: 'commit', key: `${key}-commit` },
      outcome: { fingerprint: fingerprint({ key, actual }), result: committed },
    },
    budgets: read,
  }).items;
  return { reserve, commit };
}

/**
 * One reserve → commit of `key` on the tenant's budget: a reserve reads once (reservation +
 * ledgers) then sends `reserveTransaction`; a commit reads twice (reservation, then ledgers)
 * then sends `settleTransaction` (use-cases/settlements.ts). On a sharded budget a reserve's
 * retry n is `reserveTransaction(…, n)`, on the shard that retry picks, as `transactWrite`
 * sends it; the commit then settles on the shard the reserve got.
 */
export function reserveCommitPair(
  tenant: string,
  budgets: PairBudgets,
  key: string,
  policies: PairPolicies,
): OperationShape[] {
  const variants: { reserve: ItemWrite[]; commit: ItemWrite[] }[] = [];
  const variant = (attempt: number) => {
    let v = variants[attempt];
    if (!v) {
      const { reserve, commit } = pairTransactions(tenant, budgets, key, undefined, attempt);
      // The commit updates the item the reserve put: remembered, it is sized and its index
      // entries move from the partitions they are in, as the live emulator would see them.
      const memory = new ItemMemory();
      const reserveWrites = describeTransaction(marshallTransactItems(reserve), memory);
      for (const d of reserveWrites) if (d.after !== undefined) memory.set(d.write.item, d.after);
      const commitWrites = describeTransaction(marshallTransactItems(commit), memory);
      v = { reserve: reserveWrites.map((d) => d.write), commit: commitWrites.map((d) => d.write) };
      variants[attempt] = v;
    }
    return v;
  };
  const first = variant(0);
  const sharded = (budgets.shards ?? 1) > 1;
  // The attempt the reserve last sent: the one that got through, when the commit runs.
  let taken = 0;
  return [
    {
      name: 'reserve',
      reads: 1,
      writes: first.reserve,
      writesAt: sharded
        ? (attempt) => {
            taken = attempt;
            return variant(attempt).reserve;
          }
        : undefined,
      retry: policies.reserve,
    },
    {
      name: 'commit',
      reads: 2,
      writes: first.commit,
      writesAt: sharded ? () => variant(taken).commit : undefined,
      retry: policies.commit,
    },
  ];
}

/** Private keys a client cycles through: an item is reused only this many pairs later. */
const KEY_SLOTS = 4;

/**
 * A simulator `pair` for `clients` on one tenant budget: the ledgers are shared, each client's
 * reservation and idempotency items its own. Built once per client and slot, then reused.
 */
export function tenantPairs(
  tenant: string,
  budgets: PairBudgets,
  policies: PairPolicies,
): (client: number, n: number) => readonly OperationShape[] {
  const built = new Map<string, OperationShape[]>();
  return (client, n) => {
    const key = `sim-${client}-${n % KEY_SLOTS}`;
    let shape = built.get(key);
    if (!shape) {
      shape = reserveCommitPair(tenant, budgets, key, policies);
      built.set(key, shape);
    }
    return shape;
  };
}
