import { type Amount, MAX_AMOUNT, type Unit } from '../domain/amounts.js';
import type { Actor, AuditEntry } from '../domain/audit.js';
import { type BudgetWriter, requireOwnTenant } from '../domain/caller.js';
import type { BudgetCaps } from '../domain/caps.js';
import { DomainError, invalidRequest } from '../domain/errors.js';
import { fingerprint } from '../domain/fingerprint.js';
import { applyDelta, type FundOperation, fundChange, type Ledger } from '../domain/ledger.js';
import { parseScope, segmentText, tenantOfScope } from '../domain/scopes.js';
import { applyFunding, insertLedger } from '../store/ledgers.js';
import { readSnapshot } from '../store/snapshot.js';
import { guardedWrite } from './guarded-write.js';

/** Who wrote, for the audit trail and the request it came in. */
export interface WriteContext {
  readonly now: number;
  readonly requestId: string;
}

/** A scope in canonical form: any tenant's for the operator, the key's own tenant's otherwise. */
function writableScope(writer: BudgetWriter, scope: string) {
  const segments = parseScope(scope);
  const tenant = tenantOfScope(segments);
  if (writer.kind === 'tenant') requireOwnTenant(writer, tenant, `scope ${scope}`, { scope });
  const actor: Actor =
    writer.kind === 'admin' ? { kind: 'admin' } : { kind: 'key', keyId: writer.keyId };
  // Stored and looked up in canonical form (standard values lowercase: domain/scopes.ts).
  return { segments, tenant, actor, scope: segments.map(segmentText).join('/') };
}

const noTenant = (tenant: string) =>
  new DomainError('NOT_FOUND', `tenant ${tenant} does not exist`, { tenant_id: tenant });

export interface BudgetRequest {
  readonly scope: string;
  readonly unit: Unit;
  readonly allocated: Amount;
  readonly overdraftLimit?: Amount | undefined;
  /** Escrow shards (domain/escrow.ts); absent or 1: unsharded. */
  readonly shards?: number | undefined;
  /** Soft constraints answered with ALLOW_WITH_CAPS (domain/caps.ts). */
  readonly caps?: BudgetCaps | undefined;
}
export interface Budget {
  readonly tenant: string;
  readonly ledger: Ledger;
  readonly createdAt: string;
}

/** POST /v1/admin/budgets: a ledger whose allocation is spendable at once; audited. */
export async function createBudget(
  writer: BudgetWriter,
  request: BudgetRequest,
  { now, requestId }: WriteContext,
): Promise<Budget> {
  const { segments, tenant, actor, scope } = writableScope(writer, request.scope);
  for (const [field, amount] of [
    ['allocated', request.allocated],
    ['overdraft_limit', request.overdraftLimit],
  ] as const) {
    if (amount && amount.unit !== request.unit) {
      throw invalidRequest(`${field}.unit: must equal unit ${request.unit}`, {
        field: `${field}.unit`,
      });
    }
  }
  const ledger: Ledger = {
    scope,
    unit: request.unit,
    allocated: request.allocated.amount,
    spent: 0,
    reserved: 0,
    debt: 0,
    overdraftLimit: request.overdraftLimit?.amount ?? 0,
    remaining: request.allocated.amount,
  };
  const budget: Budget = { tenant, ledger, createdAt: new Date(now).toISOString() };
  const audit: AuditEntry = {
    tenant,
    atMs: now,
    actor,
    requestId,
    action: 'budget.create',
    scope: ledger.scope,
    unit: ledger.unit,
    after: ledger,
    // The caps are budget configuration the control plane will change: audited from the start.
    ...(request.caps && { detail: { ...request.caps } }),
  };
  const inserted = await insertLedger({
    ...budget,
    segments,
    audit,
    shards: request.shards,
    caps: request.caps,
  });
  if (inserted === 'noTenant') throw noTenant(tenant);
  if (inserted === 'duplicate') {
    throw new DomainError(
      'DUPLICATE_RESOURCE',
      `a budget for ${scope} in ${request.unit} already exists`,
      { scope, unit: request.unit },
    );
  }
  return budget;
}

export interface FundRequest {
  readonly scope: string;
  readonly unit: Unit;
  readonly operation: FundOperation;
  readonly amount: Amount;
  readonly idempotencyKey: string;
  readonly reason?: string | undefined;
}
export interface Funded {
  readonly operation: FundOperation;
  readonly before: Ledger;
  readonly after: Ledger;
}

/** POST /v1/admin/budgets/{scope}/{unit}/fund: CREDIT, RESET or REPAY_DEBT, idempotent, audited. */
export function fundBudget(
  writer: BudgetWriter,
  request: FundRequest,
  { now, requestId }: WriteContext,
): Promise<Funded> {
  const { tenant, actor, scope } = writableScope(writer, request.scope);
  if (request.amount.unit !== request.unit) {
    throw new DomainError(
      'UNIT_MISMATCH',
      `amount is in ${request.amount.unit}, the budget in ${request.unit}`,
      { requested_unit: request.amount.unit, expected_unit: request.unit },
    );
  }
  const idempotency = { tenant, operation: 'fund', key: request.idempotencyKey };
  const print = fingerprint(request);
  const { unit, amount } = request;
  return guardedWrite({
    name: 'funding',
    fingerprint: print,
    read: (atomic) => readSnapshot({ idempotency, ledgers: { scopes: [scope], unit }, atomic }),
    decide: ({ ledgers, layouts }) => {
      const ledger = ledgers.get(scope);
      // A missing tenant has no budgets either: for the operator, this is the 404 to give.
      if (!ledger) throw new DomainError('NOT_FOUND', `no budget for ${scope} in ${unit}`);
      const change = fundChange(ledger, request.operation, amount.amount, MAX_AMOUNT);
      const result: Funded = {
        operation: request.operation,
        before: ledger,
        after: applyDelta(ledger, change.delta),
      };
      return { result, change, layouts };
    },
    write: ({ result, change, layouts }) =>
      applyFunding(
        change,
        { scope: idempotency, outcome: { fingerprint: print, result } },
        {
          tenant,
          atMs: now,
          actor,
          requestId,
          action: 'budget.fund',
          scope,
          unit,
          before: result.before,
          after: result.after,
          detail: {
            operation: request.operation,
            amount: amount.amount,
            ...(request.reason !== undefined && { reason: request.reason }),
          },
        },
        layouts,
      ),
    // A concurrent credit may have brought allocated near the largest amount.
    refusalOf: (refused, { change }) => {
      const allocated = refused[0]?.ledger?.allocated ?? 0;
      return change.guard.kind === 'maxAllocated' && allocated > MAX_AMOUNT - amount.amount
        ? invalidRequest(`allocated would exceed the largest amount ${MAX_AMOUNT}`, {
            field: 'amount',
          })
        : undefined;
    },
  });
}
