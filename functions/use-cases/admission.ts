import { randomUUID } from 'node:crypto';
import { config } from '../config/settings.js';
import type { Amount, Unit } from '../domain/amounts.js';
import { budgetAt, budgetKey } from '../domain/budget.js';
import type { Refusal } from '../domain/budget-events.js';
import type { Caller } from '../domain/caller.js';
import { type Caps, capsFor, mergeCaps } from '../domain/caps.js';
import { DomainError } from '../domain/errors.js';
import type { LedgerChange, OveragePolicy } from '../domain/ledger.js';
import { policyEffect, termsOf } from '../domain/policies.js';
import { policyCounters, type RequestCount } from '../domain/rate-limits.js';
import {
  admissionRefusal,
  budgetRefusal,
  firstRefusal,
  isRefusal,
  type ReasonCode,
  type RefusalCode,
  reasonCodeOf,
  refusalError,
  type ScopeRefusal,
  type TenantDenyReason,
} from '../domain/refusals.js';
import type { Action } from '../domain/reservation.js';
import { callerScopes, NO_DIMENSIONS, type Subject } from '../domain/scopes.js';
import { eventChanges } from '../domain/settlement.js';
import { requireOpenForNewWork, type TenantStatus, tenantClosed } from '../domain/tenant.js';
import { log } from '../log.js';
import { unitsOfScope } from '../store/budgets/ledger-index.js';
import { insertRefusal } from '../store/refusals.js';
import type { SnapshotRequest } from '../store/snapshot.js';
import { tenantState } from '../store/tenants.js';
import type { RefusedBudget } from '../store/write.js';
import { anyPeriodDue, budgetSource, type Snapshot } from './budget-reader.js';
import { expiredHoldsFreer } from './expiry.js';

// New work on budgets — a reservation, its dry run, a decide, a usage event — is admitted by one
// sequence of steps, in this order: the tenant takes new work → the scopes its subject affects →
// its budgets read, a refusal proven on one instant's budgets → the refusal, if any → expired
// holds that fill a refusing scope freed, once → the caps that apply (the budgets' and the
// policies'), merged → a refusal recorded for reservation.denied (sampled). Each operation plugs
// these steps into its loop.

export interface NewWork {
  readonly subject: Subject;
  readonly action: Action;
  /** What a hold would take (a reservation's estimate), or what an event spends. */
  readonly amount: Amount;
  /**
   * Present: the work is an event, a charge of `amount` (no hold, no caps), under the overage
   * policy it names (absent: a policy's default, the tenant's, else REJECT).
   */
  readonly event?: { readonly overagePolicy?: OveragePolicy | undefined } | undefined;
}

/** The decision on new work, from budgets read, repaired and (when refused) proven. */
export interface Judgement {
  readonly refusal?: ScopeRefusal | undefined;
  /** A DENY that no budget's state explains: the tenant is closed, or nothing is budgeted. */
  readonly deny?: TenantDenyReason | undefined;
  /** Present: ALLOW_WITH_CAPS, the caps of the affected budgets and policies merged. */
  readonly caps?: Caps | undefined;
  /** The scopes the work lands on (holds, charges): every derived scope, or the budgeted ones. */
  readonly scopes: readonly string[];
}

/** Why a judgement is DENY, if it is. */
export const denyReason = (j: Judgement): ReasonCode | undefined =>
  j.deny ?? (j.refusal && reasonCodeOf(j.refusal));

/**
 * The admission of one request's new work: its scopes (dimension keys are budget levels only
 * where a budget of the tenant names them), the tenant's settings and policies (its record and
 * policies are read at most once per TENANT_STATE_TTL_MS per process, store/tenants.ts), and the
 * steps of its loop.
 */
export async function admit(
  caller: Caller,
  work: NewWork,
  now: number,
  requestId?: string,
  /** A reserve's or event's rate count: its policies' counters join it before any read. */
  rate?: RequestCount,
) {
  const state = await tenantState(caller.tenant, now);
  const named = Object.keys(work.subject.dimensions ?? {}).length > 0;
  const { scopes, scopePath } = callerScopes(
    caller,
    work.subject,
    named ? state.dimensionKeys : NO_DIMENSIONS,
  );
  const { unit, amount } = work.amount;
  const effect = policyEffect(state.policies, scopes, now);
  await rate?.add(policyCounters(state.policies, scopes, 'reservation', now));
  const eventPolicy = work.event && termsOf(work.event, state.settings, effect).overagePolicy;
  // The tenant's option: scopes without a budget are skipped, not zero allocation (SPEC's rule).
  const skip = state.settings.unbudgetedScopes === 'SKIP';
  const landing = (s: Snapshot): readonly string[] =>
    skip ? scopes.filter((scope) => budgetAt(s.budgets, scope, unit)) : scopes;
  const unbudgeted = (s: Snapshot) => skip && landing(s).length === 0;
  // The close closes the tenant's budgets before its record (use-cases/tenants.ts): a CLOSED
  // budget read here is the close, observed at once, whatever the cached record says.
  const closed = (s: Snapshot) =>
    state.status === 'CLOSED' ||
    scopes.some((scope) => budgetAt(s.budgets, scope, unit)?.status === 'CLOSED');
  const freer = expiredHoldsFreer(caller.tenant, now);
  const sourceOf = (record: Omit<SnapshotRequest, 'budgets' | 'atomic'>) =>
    budgetSource({ ...record, budgets: { scopes, unit } }, now);
  const refusalOf = (s: Snapshot): ScopeRefusal | undefined =>
    eventPolicy === undefined
      ? admissionRefusal(landing(s), work.amount, s.budgets)
      : chargeRefusal(landing(s), work.amount, eventPolicy, s);
  const capsOf = (s: Snapshot): Caps | undefined => {
    const budgetCaps = capsFor(landing(s), work.amount, s.budgets);
    if (!effect.caps) return budgetCaps;
    return budgetCaps ? mergeCaps(budgetCaps, effect.caps) : effect.caps;
  };
  /** A closed tenant (409) or nothing budgeted (404): what a live write answers. */
  const requireAdmissible = (s: Snapshot) => {
    if (closed(s)) throw tenantClosed(caller.tenant);
    if (unbudgeted(s)) throw noBudget(scopePath, unit);
  };

  return {
    scopes,
    scopePath,
    unit,
    /** The request's choices resolved by the policies and the tenant's settings. */
    terms: (asked: Parameters<typeof termsOf>[0]) => termsOf(asked, state.settings, effect),
    /** An event's overage policy, resolved. */
    eventPolicy,
    /** A suspended tenant takes no new work (403); a closed one is the decision's to answer. */
    requireNotSuspended: () => requireNotSuspended(caller.tenant, state.status),
    /** The scopes the work lands on, as read. */
    landing,
    /** The budgets of the scopes, with the record that would replay the operation. */
    read: (record: Omit<SnapshotRequest, 'budgets' | 'atomic'>, atomic = false) =>
      sourceOf(record).read(atomic),

    /**
     * The repair step: the tenant takes new work; due periods rolled over; a scope with no
     * budget in this unit but budgets in others is 400 UNIT_MISMATCH (an event's, or any work's
     * that nothing is budgeted for under SKIP); expired holds that fill a scope refusing
     * BUDGET_EXCEEDED freed, once. true: read again.
     */
    async repair(s: Snapshot): Promise<boolean> {
      requireNotSuspended(caller.tenant, state.status);
      if (await sourceOf({}).repair(s)) return true;
      if (unbudgeted(s)) await requireUnitOfScopes(caller.tenant, scopes, unit, s);
      else if (eventPolicy !== undefined && !skip)
        await requireUnitOfScopes(caller.tenant, scopes, unit, s);
      return freer.free(refusalOf(s), s.budgets);
    },

    /**
     * Whether the repair step would write nothing on these budgets: no period due, nothing
     * refused (so no expired holds to free). A reserve whose first read left out its record
     * reads it before a repair that writes: a replay writes nothing.
     */
    repairsNothing: (s: Snapshot): boolean =>
      !anyPeriodDue(s.budgets, now) && refusalOf(s) === undefined,

    /** Admits a hold, with the caps that apply, or throws its refusal (409, 404). */
    allow(s: Snapshot): Judgement {
      requireAdmissible(s);
      const refusal = refusalOf(s);
      if (refusal) throw refusalError(refusal);
      return { caps: capsOf(s), scopes: landing(s) };
    },

    /** An event's charges on every scope it lands on (domain/settlement.ts), or its refusal. */
    charge(s: Snapshot): LedgerChange[] {
      requireAdmissible(s);
      const charge = eventChanges(landing(s), work.amount, eventPolicy ?? 'REJECT', s.budgets);
      if ('refusal' in charge) throw refusalError(charge.refusal);
      return charge.changes;
    },

    /**
     * The decision to report (a decide's or a dry run's DENY): a refusal seen on budgets read
     * shard by shard is thrown instead, for the loop to decide again on an atomic read.
     */
    judge(s: Snapshot): Judgement {
      if (closed(s)) return { deny: 'TENANT_CLOSED', scopes: landing(s) };
      if (unbudgeted(s)) return { deny: 'BUDGET_NOT_FOUND', scopes };
      const refusal = refusalOf(s);
      if (refusal && s.atomic === false) throw refusalError(refusal);
      return refusal ? { refusal, scopes: landing(s) } : { caps: capsOf(s), scopes: landing(s) };
    },

    /**
     * What the failed conditions of a hold's write prove: the refusal of the scope they name,
     * unless it is BUDGET_EXCEEDED and freeing expired holds is untried (read again first).
     * `landed`: the scopes the write held on, in its order.
     */
    refusalOnWrite(
      refused: readonly RefusedBudget[],
      landed: readonly string[],
    ): DomainError | undefined {
      if (refused.some(({ budget }) => budget?.status === 'CLOSED'))
        return tenantClosed(caller.tenant);
      const refusal = firstRefusal(
        refused.map(({ index, budget }) =>
          budgetRefusal({ scope: landed[index] ?? '', unit }, budget, amount),
        ),
      );
      if (refusal?.code === 'BUDGET_EXCEEDED' && !freer.tried) return undefined;
      return refusal && refusalError(refusal);
    },

    /** Records a refusal of this work for reservation.denied; anything else passes. */
    report: (error: unknown) => recordRefusal(error, caller, work, now, requestId),
  };
}

/** 404: the tenant skips unbudgeted scopes and none of the derived ones has a budget. */
const noBudget = (scopePath: string, unit: Unit) =>
  new DomainError('NOT_FOUND', `no budget in ${unit} at any scope of ${scopePath}`, {
    scope_path: scopePath,
    unit,
  });

function requireNotSuspended(tenant: string, status: TenantStatus | undefined): void {
  if (status === 'SUSPENDED') requireOpenForNewWork(tenant, status);
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
