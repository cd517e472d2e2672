import { randomUUID } from 'node:crypto';
import { config } from '../config/settings.js';
import type { Amount, Unit } from '../domain/amounts.js';
import { budgetAt, budgetKey } from '../domain/budget.js';
import type { Refusal } from '../domain/budget-events.js';
import type { Caller } from '../domain/caller.js';
import { type Caps, capsFor } from '../domain/caps.js';
import { DomainError } from '../domain/errors.js';
import type { LedgerChange, OveragePolicy } from '../domain/ledger.js';
import {
  admissionRefusal,
  budgetRefusal,
  firstRefusal,
  isRefusal,
  type RefusalCode,
  refusalError,
  type ScopeRefusal,
} from '../domain/refusals.js';
import type { Action } from '../domain/reservation.js';
import { callerScopes, NO_DIMENSIONS, type Subject } from '../domain/scopes.js';
import { eventChanges } from '../domain/settlement.js';
import { requireOpenForNewWork } from '../domain/tenant.js';
import { log } from '../log.js';
import { unitsOfScope } from '../store/budgets/ledger-index.js';
import { insertRefusal } from '../store/refusals.js';
import type { SnapshotRequest } from '../store/snapshot.js';
import { tenantState } from '../store/tenants.js';
import type { RefusedBudget } from '../store/write.js';
import { budgetSource, type Snapshot } from './budget-reader.js';
import { expiredHoldsFreer } from './expiry.js';

// New work on budgets — a reservation, its dry run, a decide, a usage event — is admitted by one
// sequence of steps, in this order: the tenant takes new work → the scopes its subject affects →
// its budgets read, a refusal proven on one instant's budgets → the refusal, if any → expired
// holds that fill a refusing scope freed, once → the caps that apply, merged → a refusal
// recorded for reservation.denied (sampled). Each operation plugs these steps into its loop.

export interface NewWork {
  readonly subject: Subject;
  readonly action: Action;
  /** What a hold would take (a reservation's estimate), or what an event spends. */
  readonly amount: Amount;
  /** An event's overage policy: present, the work is a charge of `amount` (no hold, no caps). */
  readonly eventPolicy?: OveragePolicy | undefined;
}

/** The decision on new work, from budgets read, repaired and (when refused) proven. */
export interface Judgement {
  readonly refusal?: ScopeRefusal | undefined;
  /** Present: ALLOW_WITH_CAPS, the caps of the affected budgets merged (domain/caps.ts). */
  readonly caps?: Caps | undefined;
}

/**
 * The admission of one request's new work: its scopes (dimension keys are budget levels only
 * where a budget of the tenant names them; the tenant's record is read at most once per
 * TENANT_STATE_TTL_MS per process, store/tenants.ts), and the steps of its loop.
 */
export async function admit(caller: Caller, work: NewWork, now: number, requestId?: string) {
  const state = await tenantState(caller.tenant, now);
  const named = Object.keys(work.subject.dimensions ?? {}).length > 0;
  const { scopes, scopePath } = callerScopes(
    caller,
    work.subject,
    named ? state.dimensionKeys : NO_DIMENSIONS,
  );
  const { unit, amount } = work.amount;
  const freer = expiredHoldsFreer(caller.tenant, now);
  const sourceOf = (record: Omit<SnapshotRequest, 'budgets' | 'atomic'>) =>
    budgetSource({ ...record, budgets: { scopes, unit } }, now);
  // Called once the operation is known not to be a replay: a replay answers what was done before.
  const requireTenantOpen = () => requireOpenForNewWork(caller.tenant, state.status);
  const refusalOf = (s: Snapshot): ScopeRefusal | undefined =>
    work.eventPolicy === undefined
      ? admissionRefusal(scopes, work.amount, s.budgets)
      : chargeRefusal(scopes, work.amount, work.eventPolicy, s);

  return {
    scopes,
    scopePath,
    unit,
    requireTenantOpen,
    /** The budgets of the scopes, with the record that would replay the operation. */
    read: (record: Omit<SnapshotRequest, 'budgets' | 'atomic'>, atomic = false) =>
      sourceOf(record).read(atomic),

    /**
     * The repair step: the tenant takes new work; due periods rolled over; an event's scope
     * with no budget in its unit but budgets in others is 400 UNIT_MISMATCH; expired holds that
     * fill a scope refusing BUDGET_EXCEEDED freed, once. true: read again.
     */
    async repair(s: Snapshot): Promise<boolean> {
      requireTenantOpen();
      if (await sourceOf({}).repair(s)) return true;
      if (work.eventPolicy !== undefined) await requireUnitOfScopes(caller.tenant, scopes, unit, s);
      return freer.free(refusalOf(s), s.budgets);
    },

    /** Admits a hold, with the caps that apply, or throws its refusal (409). */
    allow(s: Snapshot): Judgement {
      requireTenantOpen();
      const refusal = refusalOf(s);
      if (refusal) throw refusalError(refusal);
      return { caps: capsFor(scopes, work.amount, s.budgets) };
    },

    /** An event's charges on every scope (domain/settlement.ts), or its refusal (409). */
    charge(s: Snapshot): LedgerChange[] {
      requireTenantOpen();
      const charge = eventChanges(scopes, work.amount, work.eventPolicy ?? 'REJECT', s.budgets);
      if ('refusal' in charge) throw refusalError(charge.refusal);
      return charge.changes;
    },

    /**
     * The decision to report (a decide's or a dry run's DENY): a refusal seen on budgets read
     * shard by shard is thrown instead, for the loop to decide again on an atomic read.
     */
    judge(s: Snapshot): Judgement {
      requireTenantOpen();
      const refusal = refusalOf(s);
      if (refusal && s.atomic === false) throw refusalError(refusal);
      return refusal ? { refusal } : { caps: capsFor(scopes, work.amount, s.budgets) };
    },

    /**
     * What the failed conditions of a hold's write prove: the refusal of the scope they name,
     * unless it is BUDGET_EXCEEDED and freeing expired holds is untried (read again first).
     */
    refusalOnWrite(refused: readonly RefusedBudget[]): DomainError | undefined {
      const refusal = firstRefusal(
        refused.map(({ index, budget }) =>
          budgetRefusal({ scope: scopes[index] ?? '', unit }, budget, amount),
        ),
      );
      if (refusal?.code === 'BUDGET_EXCEEDED' && !freer.tried) return undefined;
      return refusal && refusalError(refusal);
    },

    /** Records a refusal of this work for reservation.denied; anything else passes. */
    report: (error: unknown) => recordRefusal(error, caller, work, now, requestId),
  };
}

export type Admission = Awaited<ReturnType<typeof admit>>;

/** An event's refusal: a direct debit of `actual` on every scope (domain/settlement.ts). */
function chargeRefusal(
  scopes: readonly string[],
  actual: Amount,
  policy: OveragePolicy,
  s: Snapshot,
): ScopeRefusal | undefined {
  const charge = eventChanges(scopes, actual, policy, s.budgets);
  return 'refusal' in charge ? charge.refusal : undefined;
}

/**
 * A scope without a budget in this unit is zero allocation (SPEC core behaviour 6), unless it has
 * budgets in other units: then the request is in the wrong unit → 400 UNIT_MISMATCH.
 */
async function requireUnitOfScopes(
  tenant: string,
  scopes: readonly string[],
  unit: Unit,
  s: Snapshot,
): Promise<void> {
  const missing = scopes.find((scope) => !budgetAt(s.budgets, scope, unit));
  if (missing === undefined) return;
  const units = await unitsOfScope(tenant, missing);
  if (units.length > 0) {
    throw new DomainError('UNIT_MISMATCH', `scope ${missing} has no budget in ${unit}`, {
      scope: missing,
      requested_unit: unit,
      expected_units: units,
    });
  }
}

// ---- refusal records (reservation.denied) --------------------------------------------------

/** The refusal's last record per (tenant, budget, code) in this process, for sampling. */
const lastRefusal = new Map<string, { atMs: number; suppressed: number }>();
const REFUSAL_KEYS_MAX = 10_000;

/**
 * Records a refused reservation (a live one's 409, a dry run's or a decide's DENY) for the stream
 * to report (reservation.denied). Never fails the request: the record is best effort, one small
 * PutItem on the refusal path only. At most one record per (tenant, scope, unit, code) per
 * REFUSAL_EVENT_INTERVAL_MS in this process; the refusals in between are counted on the next
 * record (`suppressed`), so an agent hammering a refused budget costs one write a second.
 */
async function recordRefusal(
  error: unknown,
  caller: Caller,
  work: NewWork,
  now: number,
  requestId?: string,
): Promise<void> {
  if (!config.REFUSAL_EVENTS || !isRefusal(error)) return;
  const d = error.details ?? {};
  const scope = typeof d.scope === 'string' ? d.scope : '';
  const unit = (typeof d.unit === 'string' ? d.unit : work.amount.unit) as Unit;
  const key = `${caller.tenant}\u0000${budgetKey({ scope, unit })}\u0000${error.code}`;
  const last = lastRefusal.get(key);
  if (last && now - last.atMs < config.REFUSAL_EVENT_INTERVAL_MS && now >= last.atMs) {
    last.suppressed++;
    return;
  }
  lastRefusal.delete(key);
  if (lastRefusal.size >= REFUSAL_KEYS_MAX) lastRefusal.clear();
  lastRefusal.set(key, { atMs: now, suppressed: 0 });
  const refusal: Refusal = {
    refusalId: `ref_${randomUUID().replaceAll('-', '')}`,
    tenant: caller.tenant,
    atMs: now,
    code: error.code as RefusalCode,
    scope,
    unit,
    requested: Number(d.requested ?? work.amount.amount),
    remaining: Number(d.remaining ?? 0),
    subject: work.subject,
    action: work.action,
    keyId: caller.keyId,
    requestId,
    suppressed: last?.suppressed ?? 0,
  };
  try {
    await insertRefusal(refusal);
  } catch (failure) {
    log.warn('refusal not recorded: no reservation.denied event for it', {
      error: failure,
      tenant: caller.tenant,
      reason_code: error.code,
    });
  }
}
