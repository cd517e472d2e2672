import { useState } from 'preact/hooks';
import {
  type AdminSchemas,
  collect,
  items,
  type Page,
  UNITS,
  type Unit,
} from '../../../client/index.js';
import { idempotencyKey, unwrap } from '../api.js';
import { ErrorMessage } from '../components.js';
import { useConsole } from '../context.js';
import { InputError } from '../errors.js';
import { parseAmount } from '../format.js';
import { useAction } from '../hooks.js';

// The bulk actions (POST /v1/admin/tenants/bulk-action, /v1/admin/budgets/bulk-action): first
// the match is counted, then applied with that count as expected_count, so a set that changed
// in between is refused (409) rather than acted on. Each row is the single operation, audited.

type Result = AdminSchemas['TenantBulkActionResponse'] | AdminSchemas['BudgetBulkActionResponse'];

/** The reference's row cap: more matches are refused, never half done. */
const MAX_ROWS = 500;

function Outcome({ result }: { readonly result: Result }) {
  return (
    <div role="status" class="bulk-result">
      <p>
        {result.action}: {result.total_matched} matched —{' '}
        <strong>{result.succeeded.length} done</strong>, {result.skipped.length} skipped,{' '}
        {result.failed.length} failed.
      </p>
      {result.failed.length > 0 && (
        <ul>
          {result.failed.map((r) => (
            <li key={r.id}>
              <span class="mono">{r.id}</span>: {r.error_code} {r.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** How many a listing holds, counting no further than one past MAX_ROWS. */
async function countUpTo<P extends Page>(
  fetchPage: (cursor: string | undefined) => Promise<P>,
  itemsOf: (page: P) => readonly unknown[],
): Promise<number> {
  return (await collect(items(fetchPage, itemsOf), MAX_ROWS + 1)).items.length;
}

/** The count, then the action on exactly that many (or nothing), with its progress and outcome. */
function useTwoSteps(count: () => Promise<number>, apply: (expected: number) => Promise<Result>) {
  const [matched, setMatched] = useState<number>();
  const [result, setResult] = useState<Result>();
  const preview = useAction(async () => {
    setResult(undefined);
    setMatched(await count());
  });
  const run = useAction(async () => {
    if (matched === undefined) return;
    setResult(await apply(matched));
    setMatched(undefined);
  });
  return { matched, result, preview, run, reset: () => setMatched(undefined) };
}

function Steps({
  steps,
  what,
  verb,
}: {
  readonly steps: ReturnType<typeof useTwoSteps>;
  readonly what: string;
  readonly verb: string;
}) {
  const { matched, result, preview, run } = steps;
  return (
    <>
      {matched === undefined ? (
        <button type="submit" disabled={preview.busy}>
          Count matching {what}
        </button>
      ) : matched > MAX_ROWS ? (
        <p class="notice">
          {matched} {what} match; at most {MAX_ROWS} at once: narrow the filter.
        </p>
      ) : (
        <button
          type="button"
          class="danger"
          disabled={run.busy || matched === 0}
          onClick={() => void run.run()}
        >
          {verb} {matched} {what}
        </button>
      )}
      {run.busy && (
        <p role="status">
          Working on {matched} {what}… <progress aria-label={`${verb} in progress`} />
        </p>
      )}
      <ErrorMessage error={preview.error ?? run.error} />
      {result && <Outcome result={result} />}
    </>
  );
}

const TENANT_ACTIONS = ['SUSPEND', 'REACTIVATE'] as const;

/** Suspend or reactivate every tenant whose id or name holds a text (closing stays one by one). */
export function BulkTenants({ onDone }: { readonly onDone: () => void }) {
  const { client } = useConsole();
  const [search, setSearch] = useState('');
  const [action, setAction] = useState<(typeof TENANT_ACTIONS)[number]>('SUSPEND');
  const status = action === 'SUSPEND' ? 'ACTIVE' : 'SUSPENDED';
  const filter = { status, ...(search.trim() && { search: search.trim() }) } as const;
  const steps = useTwoSteps(
    () =>
      countUpTo(
        (cursor) =>
          unwrap(
            client.GET('/v1/admin/tenants', {
              params: { query: { ...filter, cursor, limit: 100 } },
            }),
          ),
        (page) => page.tenants,
      ),
    async (expected) => {
      const result = await unwrap(
        client.POST('/v1/admin/tenants/bulk-action', {
          body: {
            action,
            filter,
            expected_count: expected,
            idempotency_key: idempotencyKey('bulk'),
          },
        }),
      );
      onDone();
      return result;
    },
  );
  return (
    <details class="panel">
      <summary>Suspend or reactivate many</summary>
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          void steps.preview.run();
        }}
      >
        <div class="field">
          <label for="bulk-tenant-action">Action</label>
          <select
            id="bulk-tenant-action"
            value={action}
            onChange={(e) => {
              setAction(e.currentTarget.value as (typeof TENANT_ACTIONS)[number]);
              steps.reset();
            }}
          >
            <option value="SUSPEND">Suspend the active tenants</option>
            <option value="REACTIVATE">Reactivate the suspended tenants</option>
          </select>
        </div>
        <div class="field">
          <label for="bulk-tenant-search">Whose id or name holds</label>
          <input
            id="bulk-tenant-search"
            maxLength={128}
            value={search}
            onInput={(e) => {
              setSearch(e.currentTarget.value);
              steps.reset();
            }}
          />
        </div>
        <Steps
          steps={steps}
          what="tenants"
          verb={action === 'SUSPEND' ? 'Suspend' : 'Reactivate'}
        />
      </form>
    </details>
  );
}

/** Credit (or debit) every budget of a tenant under a scope prefix, in one unit. */
export function BulkFund({
  tenant,
  onDone,
}: {
  readonly tenant: string;
  readonly onDone: () => void;
}) {
  const { client } = useConsole();
  const [prefix, setPrefix] = useState(`tenant:${tenant}`);
  const [unit, setUnit] = useState<Unit>('USD_MICROCENTS');
  const [operation, setOperation] = useState<'CREDIT' | 'DEBIT'>('CREDIT');
  const [amountText, setAmountText] = useState('');
  const filter = {
    tenant_id: tenant,
    scope_prefix: prefix.trim(),
    unit,
    status: 'ACTIVE',
  } as const;
  const steps = useTwoSteps(
    () =>
      countUpTo(
        (cursor) =>
          unwrap(
            client.GET('/v1/admin/budgets', {
              params: { query: { ...filter, cursor, limit: 100 } },
            }),
          ),
        (page) => page.ledgers,
      ),
    async (expected) => {
      const parsed = parseAmount(amountText, unit);
      if ('error' in parsed) throw new InputError(parsed.error, 'Amount');
      const result = await unwrap(
        client.POST('/v1/admin/budgets/bulk-action', {
          body: {
            action: operation,
            filter,
            amount: { unit, amount: parsed.amount },
            expected_count: expected,
            idempotency_key: idempotencyKey('bulk-fund'),
          },
        }),
      );
      onDone();
      return result;
    },
  );
  return (
    <details class="panel">
      <summary>Fund many</summary>
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          void steps.preview.run();
        }}
      >
        <div class="field">
          <label for="bulk-fund-prefix">Budgets under</label>
          <input
            id="bulk-fund-prefix"
            required
            value={prefix}
            onInput={(e) => {
              setPrefix(e.currentTarget.value);
              steps.reset();
            }}
          />
        </div>
        <div class="field">
          <label for="bulk-fund-unit">Their unit</label>
          <select
            id="bulk-fund-unit"
            value={unit}
            onChange={(e) => {
              setUnit(e.currentTarget.value as Unit);
              steps.reset();
            }}
          >
            {UNITS.map((u) => (
              <option key={u}>{u}</option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="bulk-fund-operation">Credit or debit</label>
          <select
            id="bulk-fund-operation"
            value={operation}
            onChange={(e) => setOperation(e.currentTarget.value as 'CREDIT' | 'DEBIT')}
          >
            <option value="CREDIT">Credit each</option>
            <option value="DEBIT">Debit each</option>
          </select>
        </div>
        <div class="field">
          <label for="bulk-fund-amount">
            Amount for each{unit === 'USD_MICROCENTS' ? ' (USD)' : ''}
          </label>
          <input
            id="bulk-fund-amount"
            required
            inputMode="decimal"
            value={amountText}
            onInput={(e) => setAmountText(e.currentTarget.value)}
          />
        </div>
        <Steps steps={steps} what="budgets" verb={operation === 'CREDIT' ? 'Credit' : 'Debit'} />
      </form>
    </details>
  );
}
