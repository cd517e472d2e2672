import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef } from 'preact/hooks';
import type { Budget } from '../../client/index.js';
import { useConsole } from './context.js';
import { describeError } from './errors.js';
import { formatWire } from './format.js';
import { barSegments, budgetHealth, type HealthState } from './health.js';
import type { Paged } from './hooks.js';

/**
 * An error as the operator needs it (errors.ts): what kind of failure and what to do, the field
 * at fault, the service's code and message, and its request id.
 */
export function ErrorMessage({ error }: { readonly error?: Error | undefined }) {
  if (!error) return null;
  const d = describeError(error);
  return (
    <div class={`error error-${d.kind}`} role="alert" data-kind={d.kind}>
      <strong>{d.title}</strong>{' '}
      {d.field && (
        <>
          <span class="mono">{d.field}</span>:{' '}
        </>
      )}
      {d.message}
      {(d.code || d.requestId) && (
        <span class="muted">
          {' '}
          ({[d.code, d.requestId && `request ${d.requestId}`].filter(Boolean).join(', ')})
        </span>
      )}
    </div>
  );
}

export function Loading({ what }: { readonly what: string }) {
  return (
    <p class="muted" role="status">
      Loading {what}…
    </p>
  );
}

/**
 * A modal dialog (the browser's own: focus moves in and stays, Escape closes it, focus goes
 * back where it was). Shown while mounted; `onClose` runs on Escape or a close button.
 */
export function Dialog({
  title,
  onClose,
  children,
  wide = false,
}: {
  readonly title: string;
  readonly onClose: () => void;
  readonly children: ComponentChildren;
  readonly wide?: boolean;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
    return () => dialog?.close();
  }, []);
  return (
    <dialog ref={ref} class={wide ? 'wide' : undefined} aria-labelledby={titleId} onClose={onClose}>
      <h2 id={titleId} class="dialog-title">
        {title}
      </h2>
      {children}
    </dialog>
  );
}

/** A status word with a color that is never the only cue: the word itself is always there. */
export function Badge({ value }: { readonly value: string }) {
  return <span class={`badge badge-${value.toLowerCase().replaceAll('_', '-')}`}>{value}</span>;
}

const HEALTH_WORDS: Readonly<Record<HealthState, string>> = {
  over: 'Over threshold',
  near: 'Near threshold',
  ok: 'Within budget',
};

export function HealthBadge({ state }: { readonly state: HealthState }) {
  return <span class={`badge health-${state}`}>{HEALTH_WORDS[state]}</span>;
}

/** A wide table scrolls inside its own region on a narrow screen, reachable by keyboard. */
export function TableRegion({
  label,
  children,
}: {
  readonly label: string;
  readonly children: ComponentChildren;
}) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must take focus to scroll by keyboard
    <section class="table-region" aria-label={label} tabIndex={0}>
      {children}
    </section>
  );
}

/**
 * The utilization bar: spent, reserved, debt and remaining of a budget, with the same
 * figures in its accessible name and in the legend under it.
 */
export function UtilizationBar({
  budget,
  compact = false,
}: {
  readonly budget: Budget;
  readonly compact?: boolean;
}) {
  const s = barSegments(budget);
  const { used } = budgetHealth(budget);
  const percent = Number.isFinite(used)
    ? `${Math.round(used * 100)} % used`
    : 'used, no allocation';
  const label = `${percent}: spent ${formatWire(budget.spent)}, reserved ${formatWire(budget.reserved)}, remaining ${formatWire(budget.remaining)} of ${formatWire(budget.allocated)}${budget.debt.amount > 0 ? `, debt ${formatWire(budget.debt)}` : ''}`;
  return (
    <div class={compact ? 'bar-block compact' : 'bar-block'}>
      <div class="bar" role="img" aria-label={label} data-used={used.toFixed(4)}>
        <span class="seg spent" style={{ width: `${s.spent}%` }} />
        <span class="seg reserved" style={{ width: `${s.reserved}%` }} />
        <span class="seg debt" style={{ width: `${s.debt}%` }} />
        <span class="seg remaining" style={{ width: `${s.remaining}%` }} />
      </div>
      {compact ? (
        <span class="bar-figure">{percent}</span>
      ) : (
        <ul class="legend" aria-hidden="true">
          <li>
            <span class="swatch spent" /> Spent {formatWire(budget.spent)}
          </li>
          <li>
            <span class="swatch reserved" /> Reserved {formatWire(budget.reserved)}
          </li>
          {budget.debt.amount > 0 && (
            <li>
              <span class="swatch debt" /> Debt {formatWire(budget.debt)}
            </li>
          )}
          <li>
            <span class="swatch remaining" /> Remaining {formatWire(budget.remaining)}
          </li>
          <li class="muted">{percent}</li>
        </ul>
      )}
    </div>
  );
}

/** Picks a tenant from every tenant there is; `anyLabel` adds a "no tenant" choice. */
export function TenantSelect({
  value,
  onChange,
  anyLabel,
  label = 'Tenant',
  id,
  includeClosed = true,
}: {
  readonly value: string | undefined;
  readonly onChange: (tenant: string | undefined) => void;
  readonly anyLabel?: string;
  readonly label?: string;
  readonly id?: string;
  readonly includeClosed?: boolean;
}) {
  const { tenants } = useConsole();
  const fallbackId = useId();
  const selectId = id ?? fallbackId;
  const list = (tenants.list ?? []).filter((t) => includeClosed || t.status !== 'CLOSED');
  return (
    <div class="field">
      <label for={selectId}>{label}</label>
      <select
        id={selectId}
        value={value ?? ''}
        onChange={(e) => onChange(e.currentTarget.value || undefined)}
      >
        <option value="">
          {anyLabel ?? (tenants.list ? 'Choose a tenant…' : 'Loading tenants…')}
        </option>
        {list.map((t) => (
          <option key={t.tenant_id} value={t.tenant_id}>
            {t.tenant_id} — {t.name}
            {t.status !== 'ACTIVE' ? ` (${t.status.toLowerCase()})` : ''}
          </option>
        ))}
      </select>
    </div>
  );
}

/** "Load more" under a paged list. */
export function MoreButton({
  hasMore,
  busy,
  onMore,
}: {
  readonly hasMore: boolean;
  readonly busy: boolean;
  readonly onMore: () => void;
}) {
  if (!hasMore) return null;
  return (
    <p>
      <button type="button" onClick={onMore} disabled={busy}>
        {busy ? 'Loading…' : 'Load more'}
      </button>
    </p>
  );
}

/** A labelled filter select: "Any" (the empty value) first, then each of `options`. */
export function ChoiceSelect({
  id,
  label,
  value,
  options,
  onChange,
  any = true,
}: {
  readonly id: string;
  readonly label: string;
  readonly value: string | undefined;
  readonly options: readonly string[];
  readonly onChange: (value: string) => void;
  /** A filter offers "Any"; a form field (false) only the options. @default true */
  readonly any?: boolean;
}) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <select id={id} value={value ?? ''} onChange={(e) => onChange(e.currentTarget.value)}>
        {any && <option value="">Any</option>}
        {options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    </div>
  );
}

/** "Refresh" beside the filters, off while there is nothing to list or a load runs. */
export function RefreshButton({
  onRefresh,
  disabled,
}: {
  readonly onRefresh: () => void;
  readonly disabled: boolean;
}) {
  return (
    <div class="field-button">
      <button type="button" onClick={onRefresh} disabled={disabled}>
        Refresh
      </button>
    </div>
  );
}

/**
 * A paged list as every page shows it: its error, "Loading …" before the first page, `empty`
 * when nothing matched, else `children`, and "Load more" under it.
 */
export function PagedResults({
  list,
  what,
  empty,
  children,
}: {
  readonly list: Paged<unknown>;
  readonly what: string;
  readonly empty: ComponentChildren;
  readonly children: ComponentChildren;
}) {
  return (
    <>
      <ErrorMessage error={list.error} />
      {list.items.length === 0 && list.loading ? (
        <Loading what={what} />
      ) : list.items.length === 0 ? (
        empty
      ) : (
        children
      )}
      <MoreButton hasMore={list.hasMore} busy={list.loading} onMore={list.more} />
    </>
  );
}

/**
 * A dialog around one form: submitting runs `action` (once at a time), its error shows above
 * Cancel and the submit button.
 */
export function FormDialog({
  title,
  onClose,
  action,
  submit,
  submitClass = 'primary',
  disabled = false,
  formClass = 'stacked-form',
  wide = false,
  children,
}: {
  readonly title: string;
  readonly onClose: () => void;
  readonly action: {
    readonly run: () => Promise<void>;
    readonly busy: boolean;
    readonly error?: Error;
  };
  readonly submit: ComponentChildren;
  readonly submitClass?: 'primary' | 'danger';
  readonly disabled?: boolean;
  readonly formClass?: string | undefined;
  readonly wide?: boolean;
  readonly children: ComponentChildren;
}) {
  return (
    <Dialog title={title} onClose={onClose} wide={wide}>
      <form
        class={formClass}
        onSubmit={(e) => {
          e.preventDefault();
          void action.run();
        }}
      >
        {children}
        <ErrorMessage error={action.error} />
        <div class="dialog-actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" class={submitClass} disabled={action.busy || disabled}>
            {submit}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
