import { useState } from 'preact/hooks';
import type { ApiKey } from '../../client/index.js';
import { FormDialog } from './components.js';
import { InputError } from './errors.js';
import { useAction } from './hooks.js';

/** A tenant's or a key's request-rate limits, as the wire has them (docs/decisions.md § Rate limits). */
export type RateLimits = NonNullable<ApiKey['rate_limits']>;

const FIELDS = [
  ['max_requests_per_minute', 'Requests a minute', 'every call but settling ones'],
  ['max_reservations_per_minute', 'Reservations a minute', 'reserves and events'],
  ['max_commits_per_minute', 'Commits a minute', 'commits and charges'],
] as const;
type Field = (typeof FIELDS)[number][0];
type Typed = Readonly<Record<Field, string>>;

const typedOf = (limits: RateLimits | undefined): Typed =>
  Object.fromEntries(
    FIELDS.map(([field]) => [field, limits?.[field] === undefined ? '' : String(limits[field])]),
  ) as Typed;

/** What the inputs say: the limits to send, undefined when none is set. */
function limitsOf(typed: Typed): RateLimits | undefined {
  const limits: Record<string, number> = {};
  for (const [field, label] of FIELDS) {
    const text = typed[field].trim();
    if (text === '') continue;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1 || n > 60_000)
      throw new InputError(`${label}: a whole number from 1 to 60,000, or empty.`, label);
    limits[field] = n;
  }
  return Object.keys(limits).length > 0 ? (limits as RateLimits) : undefined;
}

export const rateLimitsText = (limits: RateLimits | undefined): string =>
  limits
    ? FIELDS.flatMap(([field, label]) =>
        limits[field] === undefined ? [] : [`${label.toLowerCase()}: ${limits[field]}`],
      ).join(', ')
    : 'none';

/** The three inputs, empty meaning no limit; `idPrefix` keeps ids unique on a page. */
export function RateLimitsFields({
  idPrefix,
  typed,
  onInput,
}: {
  readonly idPrefix: string;
  readonly typed: Typed;
  readonly onInput: (typed: Typed) => void;
}) {
  return (
    <fieldset>
      <legend>Rate limits (optional; empty: no limit)</legend>
      {FIELDS.map(([field, label, hint]) => (
        <div class="field" key={field}>
          <label for={`${idPrefix}-${field}`}>
            {label} <span class="muted">({hint})</span>
          </label>
          <input
            id={`${idPrefix}-${field}`}
            type="number"
            min={1}
            max={60_000}
            step={1}
            inputMode="numeric"
            value={typed[field]}
            onInput={(e) => onInput({ ...typed, [field]: e.currentTarget.value })}
          />
        </div>
      ))}
    </fieldset>
  );
}

/** The fields' state, and the limits they say (throws an InputError on a bad value). */
export function useRateLimitsInput(initial?: RateLimits) {
  const [typed, setTyped] = useState<Typed>(typedOf(initial));
  return {
    typed,
    setTyped,
    limits: () => limitsOf(typed),
    reset: () => setTyped(typedOf(undefined)),
  };
}

/** Changes a tenant's or a key's limits (PATCH, audited); empty fields remove them. */
export function RateLimitsDialog({
  title,
  current,
  note,
  save,
  onClose,
}: {
  readonly title: string;
  readonly current: RateLimits | undefined;
  readonly note: string;
  readonly save: (limits: RateLimits | null) => Promise<void>;
  readonly onClose: () => void;
}) {
  const input = useRateLimitsInput(current);
  const apply = useAction(async () => {
    await save(input.limits() ?? null);
  });
  return (
    <FormDialog title={title} onClose={onClose} action={apply} submit="Save limits">
      <p>{note} A change applies everywhere within 5 seconds.</p>
      <RateLimitsFields idPrefix="limits" typed={input.typed} onInput={input.setTyped} />
    </FormDialog>
  );
}
