import type { Amount } from './amounts.js';
import { type Budgets, budgetAt } from './budget.js';

/**
 * SPEC § Caps: soft constraints answered with `ALLOW_WITH_CAPS`. An absent field constrains
 * nothing. Tools follow the reference's precedence: a non-empty allowlist allows only its tools
 * (the denylist is then ignored), else a non-empty denylist allows all but its tools.
 */
export interface Caps {
  readonly maxTokens?: number;
  readonly maxStepsRemaining?: number;
  readonly toolAllowlist?: readonly string[];
  readonly toolDenylist?: readonly string[];
  readonly cooldownMs?: number;
}

/** A budget's caps, and when they apply. */
export interface BudgetCaps {
  readonly caps: Caps;
  /**
   * Soft landing: the caps apply only to a hold that leaves the scope's remaining below this
   * many basis points of its allocation. Absent: to every hold.
   */
  readonly belowRemainingBps?: number | undefined;
}

/** Basis points in a whole: `belowRemainingBps` is 1..BPS. */
export const BPS = 10_000;

/**
 * A budget's caps at most, as JSON: the ledger item carries them and is written by every
 * reservation, and DynamoDB bills a transactional write per started KB of the item, so a
 * typical ledger with its caps stays under 1 KB (2 write units).
 */
export const MAX_CAPS_BYTES = 512;

/**
 * The allowlist that allows no tool. An empty list would mean "no restriction" under the
 * reference's precedence, so scopes whose allowlists share no tool answer a list holding only
 * the one name no tool can have (Action.name is 1–256 characters).
 */
export const NO_TOOL = '';

/**
 * Whether a hold leaving `remainingAfter` of `allocated` brings these caps into force:
 * remainingAfter / allocated < bps / 10 000, compared exactly (BigInt: the products of two
 * amounts may pass 2^53).
 */
export function capsApply(b: BudgetCaps, allocated: number, remainingAfter: number): boolean {
  if (b.belowRemainingBps === undefined) return true;
  return BigInt(remainingAfter) * BigInt(BPS) < BigInt(b.belowRemainingBps) * BigInt(allocated);
}

/** Tools a caps object allows, as a set; undefined: every tool (no or an empty allowlist). */
const allowed = (c: Caps): ReadonlySet<string> | undefined =>
  c.toolAllowlist && c.toolAllowlist.length > 0 ? new Set(c.toolAllowlist) : undefined;

const sorted = (tools: Iterable<string>): string[] =>
  [...new Set(tools)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

const pick = (
  a: number | undefined,
  b: number | undefined,
  f: (x: number, y: number) => number,
): number | undefined => (a === undefined ? b : b === undefined ? a : f(a, b));

/**
 * Two scopes' caps as one that is at least as strict as each: the smaller max_tokens and
 * max_steps_remaining, the larger cooldown_ms, the intersection of the allowlists less every
 * denied tool (an allowlist hides the denylist from clients, so a tool one scope denies must
 * leave it), the union of the denylists. Lists come sorted and without duplicates, so the
 * merge is commutative and associative: the answer does not depend on the order of scopes.
 */
export function mergeCaps(a: Caps, b: Caps): Caps {
  const allowA = allowed(a);
  const allowB = allowed(b);
  const denied = new Set([...(a.toolDenylist ?? []), ...(b.toolDenylist ?? [])]);
  const allow =
    allowA && allowB ? [...allowA].filter((t) => allowB.has(t)) : [...(allowA ?? allowB ?? [])];
  const kept = allow.filter((t) => !denied.has(t));
  const maxTokens = pick(a.maxTokens, b.maxTokens, Math.min);
  const maxStepsRemaining = pick(a.maxStepsRemaining, b.maxStepsRemaining, Math.min);
  const cooldownMs = pick(a.cooldownMs, b.cooldownMs, Math.max);
  return {
    ...(maxTokens !== undefined && { maxTokens }),
    ...(maxStepsRemaining !== undefined && { maxStepsRemaining }),
    ...((allowA || allowB) && { toolAllowlist: kept.length > 0 ? sorted(kept) : [NO_TOOL] }),
    ...(denied.size > 0 && { toolDenylist: sorted(denied) }),
    ...(cooldownMs !== undefined && { cooldownMs }),
  };
}

/**
 * The caps a hold of `estimate` answers with: merged over the affected scopes whose budget
 * carries caps that apply once the hold is taken (`capsApply` on the budget as read).
 * Undefined: none apply, the decision is plain ALLOW.
 */
export function capsFor(
  scopes: readonly string[],
  estimate: Amount,
  budgets: Budgets,
): Caps | undefined {
  let merged: Caps | undefined;
  for (const scope of scopes) {
    const b = budgetAt(budgets, scope, estimate.unit);
    if (!b?.caps) continue;
    const { allocated, remaining } = b.counters;
    if (!capsApply(b.caps, allocated, remaining - estimate.amount)) continue;
    merged = mergeCaps(merged ?? {}, b.caps.caps);
  }
  return merged;
}
