import { useEffect, useId, useState } from 'preact/hooks';
import {
  BUDGET_STATUSES,
  type Budget,
  type Caps,
  type CreatedBudget,
  FUND_OPERATIONS,
  type FundOperation,
  type FundRequest,
  PERIOD_KINDS,
  type PeriodKind,
  UNITS,
  type Unit,
} from '../../../client/index.js';
import { idempotencyKey, oneOf, unwrap } from '../api.js';
import {
  Badge,
  ChoiceSelect,
  Dialog,
  ErrorMessage,
  FormDialog,
  HealthBadge,
  Loading,
  PagedResults,
  RefreshButton,
  TableRegion,
  TenantSelect,
  UtilizationBar,
} from '../components.js';
import { FUND_OPERATION_HELP } from '../constants.js';
import { useConsole } from '../context.js';
import { InputError } from '../errors.js';
import {
  amountInputLabel,
  formatAmount,
  formatTime,
  formatWire,
  parseAmount,
  scopeUnder,
  UNIT_LABELS,
} from '../format.js';
import { budgetHealth } from '../health.js';
import { useAction, useLoad, usePaged } from '../hooks.js';
import { navigate, type Params } from '../router.js';
import { AccuracyDialog } from './Accuracy.js';
import { BulkFund } from './Bulk.js';

type Open =
  | { readonly kind: 'fund'; readonly budget: Budget }
  | { readonly kind: 'edit'; readonly budget: Budget }
  | { readonly kind: 'freeze'; readonly budget: Budget }
  | { readonly kind: 'periods'; readonly budget: Budget }
  | { readonly kind: 'accuracy'; readonly budget: Budget };

const budgetQuery = (b: Budget) => ({ scope: b.scope, unit: b.unit });

/**
 * One tenant's budgets (GET /v1/admin/budgets?tenant_id=), each with its utilization bar, and
 * what an operator does to them: fund, change limits and caps, freeze.
 */
export function Budgets({ params }: { readonly params: Params }) {
  const { client, notify } = useConsole();
  const { tenant, unit, status } = params;
  const prefix = params.scope_prefix;
  const list = usePaged<Budget>(
    async (cursor) => {
      const page = await unwrap(
        client.GET('/v1/admin/budgets', {
          params: {
            query: {
              tenant_id: tenant,
              unit: oneOf(UNITS, unit),
              status: oneOf(BUDGET_STATUSES, status),
              scope_prefix: prefix,
              cursor,
              limit: 50,
            },
          },
        }),
      );
      return { items: page.ledgers, cursor: page.next_cursor };
    },
    [client, tenant, unit, status, prefix],
    tenant !== undefined,
  );
  const [open, setOpen] = useState<Open>();
  const done = (message: string) => {
    notify(message);
    setOpen(undefined);
    list.reload();
  };
  const filter = (change: Record<string, string | undefined>) =>
    navigate('budgets', { ...params, ...change });

  return (
    <>
      <div class="filters">
        <TenantSelect value={tenant} onChange={(t) => navigate('budgets', { tenant: t })} />
        <ChoiceSelect
          id="budget-unit"
          label="Unit"
          value={unit}
          options={UNITS}
          onChange={(v) => filter({ unit: v })}
        />
        <ChoiceSelect
          id="budget-status"
          label="Status"
          value={status}
          options={BUDGET_STATUSES}
          onChange={(v) => filter({ status: v })}
        />
        <PrefixFilter value={prefix} onApply={(p) => filter({ scope_prefix: p })} />
        <RefreshButton onRefresh={list.reload} disabled={tenant === undefined || list.loading} />
      </div>
      {tenant === undefined ? (
        <p>Choose a tenant to see its budgets.</p>
      ) : (
        <>
          <CreateBudget
            key={tenant}
            tenant={tenant}
            onCreated={(b) => done(`Budget ${b.scope} (${b.unit}) created.`)}
          />
          <BulkFund key={`bulk-${tenant}`} tenant={tenant} onDone={list.reload} />
          <section aria-labelledby="budget-list">
            <h2 id="budget-list">Budgets of {tenant}</h2>
            <PagedResults list={list} what="budgets" empty={<p>No budgets match.</p>}>
              <ul class="cards">
                {list.items.map((b) => (
                  <li key={b.ledger_id}>
                    <BudgetCard budget={b} onOpen={setOpen} />
                  </li>
                ))}
              </ul>
            </PagedResults>
          </section>
        </>
      )}
      {open?.kind === 'fund' && (
        <FundDialog budget={open.budget} onClose={() => setOpen(undefined)} onDone={done} />
      )}
      {open?.kind === 'edit' && (
        <EditDialog budget={open.budget} onClose={() => setOpen(undefined)} onDone={done} />
      )}
      {open?.kind === 'freeze' && (
        <FreezeDialog budget={open.budget} onClose={() => setOpen(undefined)} onDone={done} />
      )}
      {open?.kind === 'periods' && (
        <PeriodsDialog budget={open.budget} onClose={() => setOpen(undefined)} />
      )}
      {open?.kind === 'accuracy' && (
        <AccuracyDialog budget={open.budget} onClose={() => setOpen(undefined)} />
      )}
    </>
  );
}

function PrefixFilter({
  value,
  onApply,
}: {
  readonly value: string | undefined;
  readonly onApply: (prefix: string | undefined) => void;
}) {
  const [text, setText] = useState(value ?? '');
  useEffect(() => setText(value ?? ''), [value]);
  return (
    <form
      class="field-with-button"
      onSubmit={(e) => {
        e.preventDefault();
        onApply(text.trim() || undefined);
      }}
    >
      <div class="field">
        <label for="budget-prefix">Scope starts with</label>
        <input
          id="budget-prefix"
          placeholder="tenant:acme/workspace:prod"
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
        />
      </div>
      <button type="submit">Filter</button>
    </form>
  );
}

function BudgetCard({
  budget: b,
  onOpen,
}: {
  readonly budget: Budget;
  readonly onOpen: (o: Open) => void;
}) {
  const titleId = useId();
  const health = budgetHealth(b);
  const closed = b.status === 'CLOSED';
  // A closed budget is read only: its estimate accuracy stays readable.
  const actions: readonly (keyof typeof CARD_ACTIONS)[] = closed
    ? ['accuracy']
    : ['edit', 'freeze', ...(b.period ? (['periods'] as const) : []), 'accuracy'];
  return (
    <article class={`budget-card health-${health.state}`} aria-labelledby={titleId}>
      <header>
        <h3 id={titleId} class="mono">
          {b.scope}
        </h3>
        <span class="unit">{UNIT_LABELS[b.unit]}</span>
        <Badge value={b.status} />
        <HealthBadge state={health.state} />
      </header>
      {(b.period_start || b.period_end) && (
        <p class="period">
          {b.period ? `Rolls over ${b.period.toLowerCase()}. ` : ''}Current period:{' '}
          {b.period_start ? formatTime(b.period_start) : '…'} to{' '}
          {b.period_end ? formatTime(b.period_end) : '…'}
        </p>
      )}
      <UtilizationBar budget={b} />
      <dl class="figures">
        <div>
          <dt>Allocated</dt>
          <dd>{formatWire(b.allocated)}</dd>
        </div>
        <div>
          <dt>Spent</dt>
          <dd>{formatWire(b.spent)}</dd>
        </div>
        <div>
          <dt>Reserved</dt>
          <dd>{formatWire(b.reserved)}</dd>
        </div>
        <div>
          <dt>Remaining</dt>
          <dd>{formatWire(b.remaining)}</dd>
        </div>
        <div>
          <dt>Debt</dt>
          <dd class={b.debt.amount > 0 ? 'alert-text' : undefined}>{formatWire(b.debt)}</dd>
        </div>
        <div>
          <dt>Overdraft limit</dt>
          <dd>
            {formatWire(b.overdraft_limit)}
            {b.is_over_limit && <strong class="alert-text"> (over it)</strong>}
          </dd>
        </div>
        {b.shards !== undefined && (
          <div>
            <dt>Escrow shards</dt>
            <dd title="Set by an operator, or grown by the service when the budget met contention (see the audit trail)">
              {b.shards}
            </dd>
          </div>
        )}
        {b.max_reservation_amount && (
          <div>
            <dt>Most one reservation may hold</dt>
            <dd>{formatWire(b.max_reservation_amount)}</dd>
          </div>
        )}
      </dl>
      {b.caps && (
        <p class="caps">
          <strong>Caps:</strong> {capsText(b.caps)}
          {b.caps_when_remaining_below_bps !== undefined &&
            `; only once remaining is below ${b.caps_when_remaining_below_bps / 100} %`}
        </p>
      )}
      {health.reasons.length > 0 && <p class="reasons">{health.reasons.join(' · ')}</p>}
      <div class="actions">
        {!closed && (
          <button type="button" class="primary" onClick={() => onOpen({ kind: 'fund', budget: b })}>
            Fund…
            <span class="visually-hidden">
              {' '}
              {b.scope} {b.unit}
            </span>
          </button>
        )}
        {actions.map((kind) => (
          <button key={kind} type="button" onClick={() => onOpen({ kind, budget: b })}>
            {kind === 'freeze' && b.status === 'FROZEN' ? 'Unfreeze…' : CARD_ACTIONS[kind]}
            <span class="visually-hidden">
              {' '}
              {b.scope} {b.unit}
            </span>
          </button>
        ))}
      </div>
    </article>
  );
}

/** What the card's buttons open. */
const CARD_ACTIONS = {
  edit: 'Limits and caps…',
  freeze: 'Freeze…',
  periods: 'Past periods…',
  accuracy: 'Estimate accuracy…',
} as const;

export function capsText(c: Caps): string {
  const parts: string[] = [];
  if (c.max_tokens !== undefined) parts.push(`max ${c.max_tokens} tokens`);
  if (c.max_steps_remaining !== undefined) parts.push(`max ${c.max_steps_remaining} steps`);
  if (c.cooldown_ms !== undefined) parts.push(`cooldown ${c.cooldown_ms} ms`);
  if (c.tool_allowlist) parts.push(`tools allowed: ${c.tool_allowlist.join(', ')}`);
  if (c.tool_denylist) parts.push(`tools denied: ${c.tool_denylist.join(', ')}`);
  return parts.join('; ');
}

function AmountField({
  id,
  unit,
  value,
  onInput,
  label,
  required = true,
  help,
}: {
  readonly id: string;
  readonly unit: Unit;
  readonly value: string;
  readonly onInput: (text: string) => void;
  readonly label?: string;
  readonly required?: boolean;
  readonly help?: string;
}) {
  const parsed = value.trim() === '' ? undefined : parseAmount(value, unit);
  const invalid = parsed !== undefined && 'error' in parsed;
  const helpId = `${id}-help`;
  return (
    <div class="field">
      <label for={id}>{label ?? amountInputLabel(unit)}</label>
      <input
        id={id}
        inputMode={unit === 'USD_MICROCENTS' ? 'decimal' : 'numeric'}
        autoComplete="off"
        required={required}
        value={value}
        aria-invalid={invalid}
        aria-describedby={helpId}
        onInput={(e) => onInput(e.currentTarget.value)}
      />
      <small id={helpId} class={invalid ? 'alert-text' : undefined}>
        {invalid && 'error' in parsed
          ? parsed.error
          : parsed && 'amount' in parsed
            ? `${formatAmount(parsed.amount, unit)} (${parsed.amount.toLocaleString('en-US')} ${unit})`
            : (help ?? ' ')}
      </small>
    </div>
  );
}

/** The amount typed, or an error thrown for the form to show. */
function amountOf(text: string, unit: Unit, what: string): number {
  const parsed = parseAmount(text, unit);
  if ('error' in parsed) throw new InputError(parsed.error, what);
  return parsed.amount;
}

function CreateBudget({
  tenant,
  onCreated,
}: {
  readonly tenant: string;
  readonly onCreated: (b: CreatedBudget) => void;
}) {
  const { client } = useConsole();
  // Only what follows tenant:<tenant> is typed: a budget made here is always the tenant's.
  const [below, setBelow] = useState('');
  const [unit, setUnit] = useState<Unit>('USD_MICROCENTS');
  const [allocated, setAllocated] = useState('');
  const [overdraft, setOverdraft] = useState('');
  const [maxHold, setMaxHold] = useState('');
  const [period, setPeriod] = useState<PeriodKind | ''>('');
  const [anchor, setAnchor] = useState('');
  const create = useAction(async () => {
    const body = {
      scope: scopeUnder(tenant, below),
      unit,
      allocated: { unit, amount: amountOf(allocated, unit, 'Allocated') },
      ...(overdraft.trim() && {
        overdraft_limit: { unit, amount: amountOf(overdraft, unit, 'Overdraft limit') },
      }),
      ...(maxHold.trim() && {
        max_reservation_amount: {
          unit,
          amount: amountOf(maxHold, unit, 'Most one reservation may hold'),
        },
      }),
      ...(period && { period }),
      ...(period && anchor.trim() && { period_anchor_day: integer(anchor, 'Anchor day') }),
    };
    const b = await unwrap(client.POST('/v1/admin/budgets', { body }));
    setAllocated('');
    setOverdraft('');
    setMaxHold('');
    onCreated(b);
  });
  return (
    <details class="panel">
      <summary>New budget for {tenant}</summary>
      <form
        class="stacked-form"
        onSubmit={(e) => {
          e.preventDefault();
          void create.run();
        }}
      >
        <div class="field">
          <label for="new-budget-scope">Scope</label>
          <div class="prefixed">
            <span class="mono prefix" id="new-budget-scope-prefix">
              tenant:{tenant}
            </span>
            <input
              id="new-budget-scope"
              class="mono"
              value={below}
              placeholder="/workspace:prod"
              aria-describedby="new-budget-scope-prefix new-budget-scope-help"
              onInput={(e) => setBelow(e.currentTarget.value)}
            />
          </div>
          <small id="new-budget-scope-help">
            Empty for the tenant's own budget, or a scope under it: /workspace:prod/agent:summarizer
          </small>
        </div>
        <ChoiceSelect
          id="new-budget-unit"
          label="Unit"
          value={unit}
          options={UNITS}
          any={false}
          onChange={(u) => setUnit(u as Unit)}
        />
        <div class="field">
          <label for="new-budget-period">Rolls over</label>
          <select
            id="new-budget-period"
            value={period}
            aria-describedby="new-budget-period-help"
            onChange={(e) => setPeriod(e.currentTarget.value as PeriodKind | '')}
          >
            <option value="">Never (a fixed allocation)</option>
            {PERIOD_KINDS.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
          <small id="new-budget-period-help">
            A rolling budget starts each period (UTC) with its allocation again.
          </small>
        </div>
        {period !== '' && period !== 'DAILY' && (
          <div class="field">
            <label for="new-budget-anchor">
              {period === 'WEEKLY'
                ? 'Starts on day (1 = Monday … 7 = Sunday)'
                : 'Starts on day of month (1–28)'}
            </label>
            <input
              id="new-budget-anchor"
              inputMode="numeric"
              placeholder="1"
              value={anchor}
              onInput={(e) => setAnchor(e.currentTarget.value)}
            />
          </div>
        )}
        <AmountField
          id="new-budget-allocated"
          unit={unit}
          label={`Allocated${period ? ' per period' : ''} (${unit === 'USD_MICROCENTS' ? 'USD' : UNIT_LABELS[unit]})`}
          value={allocated}
          onInput={setAllocated}
        />
        <AmountField
          id="new-budget-overdraft"
          unit={unit}
          label={`Overdraft limit (${unit === 'USD_MICROCENTS' ? 'USD' : UNIT_LABELS[unit]}, optional)`}
          required={false}
          value={overdraft}
          onInput={setOverdraft}
          help="How far commits may go past the allocation as debt; 0 when empty."
        />
        <AmountField
          id="new-budget-max-hold"
          unit={unit}
          label={`Most one reservation may hold (${unit === 'USD_MICROCENTS' ? 'USD' : UNIT_LABELS[unit]}, optional)`}
          required={false}
          value={maxHold}
          onInput={setMaxHold}
          help="A larger estimate is refused, whatever the remaining; no cap when empty."
        />
        <ErrorMessage error={create.error} />
        <button type="submit" class="primary" disabled={create.busy}>
          Create budget
        </button>
      </form>
    </details>
  );
}

interface DialogProps {
  readonly budget: Budget;
  readonly onClose: () => void;
  readonly onDone: (message: string) => void;
}

/** POST /v1/admin/budgets/fund?scope=&unit=, with an idempotency key per distinct request. */
function FundDialog({ budget: b, onClose, onDone }: DialogProps) {
  const { client } = useConsole();
  const [operation, setOperation] = useState<FundOperation>('CREDIT');
  const [amount, setAmount] = useState('');
  const [reason, setReason] = useState('');
  // A retry of the same request reuses its key (applied once); a changed request gets a new one.
  const [key, setKey] = useState(() => idempotencyKey('fund'));
  useEffect(() => setKey(idempotencyKey('fund')), [operation, amount, reason]);
  const fund = useAction(async () => {
    const request: FundRequest = {
      operation,
      amount: { unit: b.unit, amount: amountOf(amount, b.unit, 'Amount') },
      idempotency_key: key,
      ...(reason.trim() && { reason: reason.trim() }),
    };
    const funded = await unwrap(
      client.POST('/v1/admin/budgets/fund', {
        params: { query: budgetQuery(b) },
        body: request,
      }),
    );
    onDone(
      `${operation} applied to ${b.scope}: allocated ${formatWire(funded.new_allocated)}, remaining ${formatWire(funded.new_remaining)}.`,
    );
  });
  return (
    <FormDialog
      title={`Fund ${b.scope}`}
      onClose={onClose}
      action={fund}
      submit={`Apply ${operation}`}
    >
      <p class="muted">
        Now: allocated {formatWire(b.allocated)}, remaining {formatWire(b.remaining)}, debt{' '}
        {formatWire(b.debt)}.
      </p>
      <div class="field">
        <label for="fund-operation">Operation</label>
        <select
          id="fund-operation"
          value={operation}
          aria-describedby="fund-operation-help"
          onChange={(e) => setOperation(e.currentTarget.value as FundOperation)}
        >
          {FUND_OPERATIONS.map((o) => (
            <option key={o} value={o}>
              {o}
            </option>
          ))}
        </select>
        <small id="fund-operation-help">{FUND_OPERATION_HELP[operation]}</small>
      </div>
      <AmountField id="fund-amount" unit={b.unit} value={amount} onInput={setAmount} />
      <div class="field">
        <label for="fund-reason">Reason (optional, kept in the audit trail)</label>
        <input
          id="fund-reason"
          maxLength={1024}
          value={reason}
          onInput={(e) => setReason(e.currentTarget.value)}
        />
      </div>
    </FormDialog>
  );
}

const list = (text: string): string[] | undefined => {
  const items = text
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  return items.length > 0 ? items : undefined;
};

const integer = (text: string, what: string): number | undefined => {
  if (text.trim() === '') return undefined;
  if (!/^\d+$/.test(text.trim())) throw new InputError('enter a whole number, 0 or more.', what);
  return Number(text.trim());
};

/** PATCH /v1/admin/budgets?scope=&unit=: the overdraft limit, the caps and their threshold. */
function EditDialog({ budget: b, onClose, onDone }: DialogProps) {
  const { client } = useConsole();
  const caps = b.caps ?? {};
  const [overdraft, setOverdraft] = useState(
    b.overdraft_limit.amount === 0 ? '' : plainAmount(b.overdraft_limit.amount, b.unit),
  );
  const [maxTokens, setMaxTokens] = useState(caps.max_tokens?.toString() ?? '');
  const [maxSteps, setMaxSteps] = useState(caps.max_steps_remaining?.toString() ?? '');
  const [cooldown, setCooldown] = useState(caps.cooldown_ms?.toString() ?? '');
  const [allow, setAllow] = useState(caps.tool_allowlist?.join(', ') ?? '');
  const [deny, setDeny] = useState(caps.tool_denylist?.join(', ') ?? '');
  const [threshold, setThreshold] = useState(
    b.caps_when_remaining_below_bps === undefined
      ? ''
      : String(b.caps_when_remaining_below_bps / 100),
  );
  const [maxHold, setMaxHold] = useState(
    b.max_reservation_amount ? plainAmount(b.max_reservation_amount.amount, b.unit) : '',
  );
  const save = useAction(async () => {
    const limit = overdraft.trim() === '' ? 0 : amountOf(overdraft, b.unit, 'Overdraft limit');
    const nextCaps: Caps = Object.fromEntries(
      Object.entries({
        max_tokens: integer(maxTokens, 'Max tokens'),
        max_steps_remaining: integer(maxSteps, 'Max steps'),
        cooldown_ms: integer(cooldown, 'Cooldown'),
        tool_allowlist: list(allow),
        tool_denylist: list(deny),
      }).filter(([, v]) => v !== undefined),
    );
    const hasCaps = Object.keys(nextCaps).length > 0;
    let bps: number | undefined;
    if (threshold.trim() !== '') {
      const percent = Number(threshold.trim());
      if (!(percent > 0 && percent <= 100))
        throw new InputError('a percentage above 0, at most 100.', 'Threshold');
      if (!hasCaps) throw new InputError('set at least one cap for it to apply to.', 'Threshold');
      bps = Math.round(percent * 100);
    }
    const hold =
      maxHold.trim() === ''
        ? undefined
        : amountOf(maxHold, b.unit, 'Most one reservation may hold');
    const body = {
      ...(limit !== b.overdraft_limit.amount && {
        overdraft_limit: { unit: b.unit, amount: limit },
      }),
      ...(hold !== b.max_reservation_amount?.amount && {
        max_reservation_amount: hold === undefined ? null : { unit: b.unit, amount: hold },
      }),
      ...(hasCaps
        ? { caps: nextCaps, ...(bps !== undefined && { caps_when_remaining_below_bps: bps }) }
        : b.caps
          ? { caps: null }
          : {}),
    };
    if (Object.keys(body).length === 0) throw new InputError('Nothing to change.');
    await unwrap(client.PATCH('/v1/admin/budgets', { params: { query: budgetQuery(b) }, body }));
    onDone(`Limits and caps of ${b.scope} saved.`);
  });
  return (
    <FormDialog
      title={`Limits and caps of ${b.scope}`}
      onClose={onClose}
      action={save}
      submit="Save"
      wide
    >
      <AmountField
        id="edit-overdraft"
        unit={b.unit}
        label={`Overdraft limit (${UNIT_LABELS[b.unit]})`}
        required={false}
        value={overdraft}
        onInput={setOverdraft}
        help="Empty means 0: no commit may go past the allocation."
      />
      <AmountField
        id="edit-max-hold"
        unit={b.unit}
        label={`Most one reservation may hold (${UNIT_LABELS[b.unit]})`}
        required={false}
        value={maxHold}
        onInput={setMaxHold}
        help="A larger estimate is refused (409 BUDGET_EXCEEDED); empty: no cap."
      />
      <fieldset>
        <legend>Caps answered with ALLOW_WITH_CAPS (empty: none)</legend>
        <div class="grid-2">
          <div class="field">
            <label for="edit-max-tokens">Max tokens</label>
            <input
              id="edit-max-tokens"
              inputMode="numeric"
              value={maxTokens}
              onInput={(e) => setMaxTokens(e.currentTarget.value)}
            />
          </div>
          <div class="field">
            <label for="edit-max-steps">Max steps remaining</label>
            <input
              id="edit-max-steps"
              inputMode="numeric"
              value={maxSteps}
              onInput={(e) => setMaxSteps(e.currentTarget.value)}
            />
          </div>
          <div class="field">
            <label for="edit-cooldown">Cooldown (ms)</label>
            <input
              id="edit-cooldown"
              inputMode="numeric"
              value={cooldown}
              onInput={(e) => setCooldown(e.currentTarget.value)}
            />
          </div>
          <div class="field">
            <label for="edit-threshold">Only when remaining is below (%)</label>
            <input
              id="edit-threshold"
              inputMode="decimal"
              value={threshold}
              onInput={(e) => setThreshold(e.currentTarget.value)}
            />
          </div>
          <div class="field">
            <label for="edit-allow">Tools allowed (comma-separated)</label>
            <input id="edit-allow" value={allow} onInput={(e) => setAllow(e.currentTarget.value)} />
          </div>
          <div class="field">
            <label for="edit-deny">Tools denied (comma-separated)</label>
            <input id="edit-deny" value={deny} onInput={(e) => setDeny(e.currentTarget.value)} />
          </div>
        </div>
      </fieldset>
    </FormDialog>
  );
}

/** An amount as its input field takes it back (no grouping, no symbol). */
function plainAmount(amount: number, unit: Unit): string {
  return formatAmount(amount, unit).replace(/[$,]/g, '').replace(/ .*$/, '');
}

/** POST /v1/admin/budgets/freeze or /unfreeze?scope=&unit=. */
function FreezeDialog({ budget: b, onClose, onDone }: DialogProps) {
  const { client } = useConsole();
  const freezing = b.status !== 'FROZEN';
  const apply = useAction(async () => {
    const query = { params: { query: budgetQuery(b) } };
    await unwrap(
      freezing
        ? client.POST('/v1/admin/budgets/freeze', query)
        : client.POST('/v1/admin/budgets/unfreeze', query),
    );
    onDone(`${b.scope} is now ${freezing ? 'FROZEN' : 'ACTIVE'}.`);
  });
  return (
    <Dialog title={`${freezing ? 'Freeze' : 'Unfreeze'} ${b.scope}?`} onClose={onClose}>
      <p>
        {freezing
          ? 'New reservations and events under this budget will be refused (409 BUDGET_FROZEN) at once; open reservations still settle and funding still works.'
          : 'The budget takes new reservations again.'}
      </p>
      <ErrorMessage error={apply.error} />
      <div class="dialog-actions">
        <button type="button" onClick={onClose}>
          Cancel
        </button>
        <button
          type="button"
          class={freezing ? 'danger' : 'primary'}
          disabled={apply.busy}
          onClick={() => void apply.run()}
        >
          {freezing ? 'Freeze budget' : 'Unfreeze budget'}
        </button>
      </div>
    </Dialog>
  );
}

/** GET /v1/admin/budgets/periods?scope=&unit=: a rolling budget's closed periods, newest first. */
function PeriodsDialog({
  budget: b,
  onClose,
}: {
  readonly budget: Budget;
  readonly onClose: () => void;
}) {
  const { client } = useConsole();
  const periods = useLoad(
    () =>
      unwrap(
        client.GET('/v1/admin/budgets/periods', {
          params: { query: { ...budgetQuery(b), limit: 24 } },
        }),
      ),
    [client, b.scope, b.unit],
  );
  const list = periods.data?.periods ?? [];
  return (
    <Dialog title={`Past periods of ${b.scope}`} onClose={onClose} wide>
      <ErrorMessage error={periods.error} />
      {periods.loading ? (
        <Loading what="periods" />
      ) : list.length === 0 ? (
        <p>No period has closed yet.</p>
      ) : (
        <TableRegion label="Closed periods">
          <table>
            <thead>
              <tr>
                <th scope="col">Period</th>
                <th scope="col">Allocated</th>
                <th scope="col">Spent</th>
                <th scope="col">Held at its end</th>
                <th scope="col">Debt</th>
              </tr>
            </thead>
            <tbody>
              {list.map((p) => (
                <tr key={p.period_start}>
                  <th scope="row">
                    {formatTime(p.period_start)}
                    <br />
                    <span class="muted">to {formatTime(p.period_end)}</span>
                  </th>
                  <td>{formatWire(p.allocated)}</td>
                  <td>{formatWire(p.spent)}</td>
                  <td>{formatWire(p.reserved)}</td>
                  <td>{formatWire(p.debt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableRegion>
      )}
      {periods.data?.has_more && <p class="muted">The 24 most recent periods are shown.</p>}
      <div class="dialog-actions">
        <button type="button" class="primary" onClick={onClose}>
          Close
        </button>
      </div>
    </Dialog>
  );
}
