import { type Budgets, budgetAt, budgetKey } from '../domain/budget.js';
import { releaseIntoParent, settlesIntoParent } from '../domain/delegation.js';
import { mergeChanges } from '../domain/ledger.js';
import type { ScopeRefusal } from '../domain/refusals.js';
import {
  affectedScopes,
  expiryChanges,
  type Reservation,
  settleDeadline,
} from '../domain/reservation.js';
import {
  nextDeadlineBefore,
  queryDueReservations,
  readReservation,
} from '../store/reservation-queries.js';
import { expireReservations, settleReservation } from '../store/reservation-writes.js';
import { recordMetric } from '../telemetry/invocation.js';
import { currentBudgetsOf } from './budget-reader.js';

/** TransactWriteItems takes at most 100 items: reservations plus the distinct ledgers they hold. */
const MAX_TRANSACTION_ITEMS = 100;
/** Due entries read per shard per round (16 shards). */
const DUE_PER_SHARD = 100;

export interface SweepResult {
  readonly expired: number;
  readonly examined: number;
  /** How long past its deadline the oldest due reservation found was (0: none was due). */
  readonly lagMs: number;
}

/**
 * Expires every reservation past expires_at_ms + grace_period_ms: rounds of one parallel read
 * of the due index, then batched transactions, until a round finds nothing to expire or
 * `stopAt` (real time) is reached. Every expiry is conditioned on ACTIVE-and-due, so two sweepers at once, or a sweep
 * racing a commit, settle each reservation exactly once. `now` is read per batch:
 * finalized_at_ms is when that reservation was expired.
 */
export async function sweepExpiredReservations(
  now: () => number,
  stopAt = Number.POSITIVE_INFINITY,
): Promise<SweepResult> {
  let expired = 0;
  let examined = 0;
  let lagMs = 0;
  while (Date.now() < stopAt) {
    const at = now();
    const page = await queryDueReservations(at, DUE_PER_SHARD);
    examined += page.reservations.length;
    for (const r of page.reservations) lagMs = Math.max(lagMs, at - settleDeadline(r));
    const progressed = await expireAll(page.reservations, now);
    expired += progressed;
    // Read again while a round expires anything: what fell due meanwhile goes in this pass,
    // not the next tick. Nothing expirable (index entries not yet caught up): next pass.
    if (progressed === 0) break;
  }
  return { expired, examined, lagMs };
}

/** What a long sweep is handed: one pass (with its telemetry), the clock, its pace. */
export interface SweepPorts {
  /** One pass over the due index, stopping at `stopAt` (real time). */
  readonly pass: (stopAt: number) => Promise<SweepResult>;
  /** Server time. */
  readonly clock: () => number;
  readonly intervalMs: number;
}

/**
 * Sweeps, then looks for the next deadline due before `endAt` (real time): none → it ends at
 * once, so an idle deployment costs one short invocation a minute; otherwise it sweeps again
 * every `intervalMs` (or at that deadline, if sooner), so a due hold comes back within the
 * interval, not the minute. Answers how many it expired.
 */
export async function sweepUntil(endAt: number, ports: SweepPorts): Promise<number> {
  let expired = 0;
  for (;;) {
    expired += (await ports.pass(endAt)).expired;
    const left = endAt - Date.now();
    const next = await nextDeadlineBefore(ports.clock() + left);
    if (next === undefined) break;
    // Already due yet not expired by this pass: index entries catching up, or new arrivals.
    const wait = Math.min(ports.intervalMs, Math.max(250, next - ports.clock()));
    if (wait >= endAt - Date.now()) break;
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
  return expired;
}

/**
 * SPEC: an expired hold never refuses work. Before a request is refused with BUDGET_EXCEEDED
 * on a scope that still holds reservations, this tenant's reservations holding that scope and
 * past their deadline are expired (racing the sweeper safely); true when any was, so the
 * request is evaluated again on fresh ledgers.
 */
async function expireHoldsBlocking(
  tenant: string,
  refusal: ScopeRefusal | undefined,
  budgets: Budgets,
  now: number,
): Promise<boolean> {
  if (refusal?.code !== 'BUDGET_EXCEEDED') return false;
  if ((budgetAt(budgets, refusal.scope, refusal.unit)?.counters.reserved ?? 0) <= 0) return false;
  return (
    (await freeingOf(tenant, `${refusal.scope}\u0000${refusal.unit}`, now, async () => {
      const { reservations } = await queryDueReservations(now, DUE_PER_SHARD, tenant);
      const holding = reservations.filter(
        (r) => affectedScopes(r).includes(refusal.scope) && r.reserved.unit === refusal.unit,
      );
      return expireAll(holding, () => now);
    })) > 0
  );
}

/**
 * How far apart two refusals of one scope may be (by their request's `now`) and still share one
 * freeing: a burst refused at once on a spent budget looks once (16 queries of the due index and
 * the expiries), not once per request. A hold that fell due in between may refuse the later one:
 * at most this long after its deadline, well inside the grace period clients are given.
 */
export const SHARED_FREEING_MS = 250;

/** The freeing under way per tenant and scope, in this process: its `now` and its result. */
const freeings = new Map<string, { readonly atMs: number; readonly expired: Promise<number> }>();

async function freeingOf(
  tenant: string,
  scope: string,
  now: number,
  free: () => Promise<number>,
): Promise<number> {
  const key = `${tenant}\u0000${scope}`;
  const running = freeings.get(key);
  if (running && now >= running.atMs && now - running.atMs <= SHARED_FREEING_MS) {
    // A shared freeing that failed fails only the request that ran it: this one frees its own.
    const shared = await running.expired.catch(() => undefined);
    if (shared !== undefined) return shared;
    return free();
  }
  const expired = free();
  freeings.set(key, { atMs: now, expired });
  const forget = () => {
    if (freeings.get(key)?.expired === expired) freeings.delete(key);
  };
  expired.then(forget, forget);
  return expired;
}

/**
 * A request frees expired holds at most once; after that its refusal stands. `tried` tells a
 * write whose condition failed to read again rather than refuse while freeing is untried.
 */
export function expiredHoldsFreer(tenant: string, now: number) {
  const freer = {
    tried: false,
    async free(refusal: ScopeRefusal | undefined, budgets: Budgets) {
      // A reservation's cap is no shortage: freeing holds cannot get an estimate under it.
      if (freer.tried || refusal?.code !== 'BUDGET_EXCEEDED') return false;
      if (refusal.maxReservationAmount !== undefined) return false;
      freer.tried = true;
      return expireHoldsBlocking(tenant, refusal, budgets, now);
    },
  };
  return freer;
}

/** Returns the hold of one reservation past its deadline; false if anything settled it first. */
export async function expireReservation(r: Reservation, now: number): Promise<boolean> {
  return (await expireAll([r], () => now)) === 1;
}

/** Expires as many as fit per transaction; returns how many this call expired. */
async function expireAll(due: readonly Reservation[], now: () => number): Promise<number> {
  let expired = 0;
  for (const batch of batches(due.filter((r) => !inTree(r)))) {
    expired += await expireBatch(batch, now());
  }
  for (const r of due.filter(inTree)) expired += await expireInTree(r, now());
  return expired;
}

/** A child, or a parent with ACTIVE children: expired one at a time, children first. */
const inTree = (r: Reservation) =>
  r.delegation !== undefined || (r.activeChildren?.length ?? 0) > 0;

/**
 * Expires `r`'s ACTIVE children (theirs first: a child is due no later than its parent), then
 * `r`: into its parent's hold while the parent is ACTIVE, else back to the budgets. Each step
 * is one transaction conditioned on what it read, so a commit racing it, or another sweeper,
 * settles each reservation exactly once; what lost a race waits for the next pass.
 */
async function expireInTree(r: Reservation, now: number): Promise<number> {
  let expired = 0;
  for (const id of r.activeChildren ?? []) {
    const child = await readReservation(id);
    if (child?.status === 'ACTIVE') expired += await expireInTree(child, now);
  }
  const fresh = r.activeChildren?.length ? await readReservation(r.reservationId) : r;
  if (!fresh || expiryChanges(fresh, now) === undefined || fresh.activeChildren?.length) {
    return expired;
  }
  const parent = fresh.delegation && (await readReservation(fresh.delegation.parentId));
  if (!settlesIntoParent(fresh, parent)) return expired + (await expireBatch([fresh], now));
  const rolling = fresh.holds.some((h) => h.periodStart);
  const current = rolling ? await currentBudgetsOf([fresh], now) : undefined;
  const into = releaseIntoParent(fresh, parent, current);
  const held = { unit: parent.reserved.unit, amount: into.parentHeld };
  const outcome = await settleReservation({
    reservation: fresh,
    to: 'EXPIRED',
    now,
    changes: into.changes,
    parent: { reservation: parent, after: { ...parent, held } },
  });
  if (outcome.kind !== 'written') return expired;
  countExpiries([fresh]);
  return expired + 1;
}

/** Greedy batches whose reservations and distinct ledgers fit one transaction. */
function batches(due: readonly Reservation[]): Reservation[][] {
  const result: Reservation[][] = [];
  let batch: Reservation[] = [];
  let ledgers = new Set<string>();
  for (const r of due) {
    const mine = affectedScopes(r).map((scope) => budgetKey({ scope, unit: r.reserved.unit }));
    const union = new Set([...ledgers, ...mine]);
    if (batch.length > 0 && batch.length + 1 + union.size > MAX_TRANSACTION_ITEMS) {
      result.push(batch);
      batch = [];
      ledgers = new Set();
    }
    batch.push(r);
    for (const l of mine) ledgers.add(l);
  }
  if (batch.length > 0) result.push(batch);
  return result;
}

/** Rounds a batch may take when rolling budgets move under it before it is refused. */
const MAX_PERIOD_ROUNDS = 3;

/**
 * One batch; the reservations a commit or another sweep settled meanwhile drop out. Holds on
 * rolling budgets return to the period they were taken in (a closed one's own ledger, or the
 * current period, conditioned on the budget still being in it).
 */
async function expireBatch(batch: readonly Reservation[], now: number): Promise<number> {
  let pending = batch.filter((r) => expiryChanges(r, now) !== undefined);
  let periodRounds = 0;
  while (pending.length > 0) {
    const rolling = pending.some((r) => r.holds.some((h) => h.periodStart));
    const current = rolling ? await currentBudgetsOf(pending, now) : undefined;
    const changes = mergeChanges(pending.flatMap((r) => expiryChanges(r, now, current) ?? []));
    const outcome = await expireReservations(pending, changes, now);
    if (outcome.kind === 'written') {
      countExpiries(pending);
      return pending.length;
    }
    if (outcome.ids.length === 0) {
      // Only a rolling budget that moved into a new period meanwhile fails an expiry's ledger.
      if (rolling && ++periodRounds < MAX_PERIOD_ROUNDS) continue;
      throw new Error('expiry batch refused on a ledger');
    }
    pending = pending.filter((r) => !outcome.ids.includes(r.reservationId));
  }
  return 0;
}

/** Expiries per tenant: a sweep's batch spans tenants (the Tenant dimension, when it is on). */
function countExpiries(expired: readonly Reservation[]): void {
  const perTenant = new Map<string, number>();
  for (const r of expired) perTenant.set(r.tenant, (perTenant.get(r.tenant) ?? 0) + 1);
  for (const [tenant, n] of perTenant) recordMetric('Expiries', n, {}, tenant);
}
