import { describe, expect, expectTypeOf, it } from 'vitest';
import { ApiError, type AuditEntry, type Budget } from '../../client/index.js';
import * as vocabulary from '../../client/vocabulary.js';
import { AUDIT_CSV_HEADER, auditCsv, csvField, toCsv } from '../../console/src/csv.js';
import { describeError, InputError, NetworkError } from '../../console/src/errors.js';
import {
  formatAmount,
  formatDuration,
  formatTime,
  parseAmount,
  scopeUnder,
  utcInputToIso,
} from '../../console/src/format.js';
import { barSegments, budgetHealth } from '../../console/src/health.js';
import {
  currentKey,
  IDLE_TIMEOUT_MS,
  type Store,
  signIn,
  signOut,
  touch,
} from '../../console/src/session.js';
import { apiBase } from '../../console/src/urls.js';
import { UNITS } from '../../functions/domain/amounts.js';
import type { keyStatus } from '../../functions/domain/api-keys.js';
import { AUDIT_OPERATION_NAMES, AUDIT_OPERATIONS } from '../../functions/domain/audit.js';
import { BUDGET_STATUSES, FUND_OPERATIONS } from '../../functions/domain/ledger.js';
import { PERIOD_KINDS } from '../../functions/domain/period.js';
import { PERMISSIONS } from '../../functions/domain/permissions.js';
import type { ReservationStatus } from '../../functions/domain/reservation.js';
import { TENANT_STATUSES } from '../../functions/domain/tenant.js';

/** The operator console's pure parts: what it shows and sends is computed here, not in a browser. */

describe('the vocabularies of the typed client (client/vocabulary.ts)', () => {
  it('are the service’s own, in the domain’s order', () => {
    expect(vocabulary.UNITS).toEqual(UNITS);
    expect(vocabulary.PERMISSIONS).toEqual(PERMISSIONS);
    expect(vocabulary.TENANT_STATUSES).toEqual(TENANT_STATUSES);
    expect(vocabulary.BUDGET_STATUSES).toEqual(BUDGET_STATUSES);
    expect(vocabulary.FUND_OPERATIONS).toEqual(FUND_OPERATIONS);
    expect(vocabulary.PERIOD_KINDS).toEqual(PERIOD_KINDS);
    expect([...vocabulary.AUDIT_OPERATIONS].sort()).toEqual([...AUDIT_OPERATION_NAMES].sort());
    expect([...vocabulary.AUDIT_RESOURCE_TYPES].sort()).toEqual(
      [...new Set(Object.values(AUDIT_OPERATIONS).map((o) => o.resourceType))].sort(),
    );
    expectTypeOf<
      (typeof vocabulary.RESERVATION_STATUSES)[number]
    >().toEqualTypeOf<ReservationStatus>();
    expectTypeOf<(typeof vocabulary.KEY_STATUSES)[number]>().toEqualTypeOf<
      ReturnType<typeof keyStatus>
    >();
  });
});

describe('amounts', () => {
  it('shows USD_MICROCENTS as exact dollars, other units as grouped integers', () => {
    expect(formatAmount(100_000_000, 'USD_MICROCENTS')).toBe('$1.00');
    expect(formatAmount(420_000, 'USD_MICROCENTS')).toBe('$0.0042');
    expect(formatAmount(1, 'USD_MICROCENTS')).toBe('$0.00000001');
    expect(formatAmount(-9_000_000, 'USD_MICROCENTS')).toBe('−$0.09');
    expect(formatAmount(Number.MAX_SAFE_INTEGER, 'USD_MICROCENTS')).toBe('$90,071,992.54740991');
    expect(formatAmount(1_234_567, 'TOKENS')).toBe('1,234,567 tokens');
    expect(formatAmount(0, 'RISK_POINTS')).toBe('0 risk points');
  });

  it('reads dollars typed by an operator exactly, and refuses what is not an amount', () => {
    expect(parseAmount('0.50', 'USD_MICROCENTS')).toEqual({ amount: 50_000_000 });
    expect(parseAmount('$1,000.00000001', 'USD_MICROCENTS')).toEqual({ amount: 100_000_000_001 });
    expect(parseAmount('.1', 'USD_MICROCENTS')).toEqual({ amount: 10_000_000 });
    expect(parseAmount('0.29', 'USD_MICROCENTS')).toEqual({ amount: 29_000_000 }); // 0.29 * 1e8 is 28999999.999999996
    expect(parseAmount('1,000', 'TOKENS')).toEqual({ amount: 1000 });
    for (const [text, unit] of [
      ['0.000000001', 'USD_MICROCENTS'],
      ['1e3', 'USD_MICROCENTS'],
      ['-1', 'USD_MICROCENTS'],
      ['.', 'USD_MICROCENTS'],
      ['', 'USD_MICROCENTS'],
      ['1.5', 'TOKENS'],
      ['99999999999999999', 'TOKENS'],
      ['90071993', 'USD_MICROCENTS'],
    ] as const) {
      expect(parseAmount(text, unit), `${text} ${unit}`).toHaveProperty('error');
    }
  });

  it('round-trips every amount it shows', () => {
    for (const amount of [0, 1, 99, 100_000_000, 123_456_789_012, Number.MAX_SAFE_INTEGER]) {
      const shown = formatAmount(amount, 'USD_MICROCENTS');
      expect(parseAmount(shown, 'USD_MICROCENTS')).toEqual({ amount });
    }
  });
});

describe('time', () => {
  it('shows durations in their two largest units and instants in UTC', () => {
    expect(formatDuration(45_400)).toBe('45 s');
    expect(formatDuration(200_000)).toBe('3 min 20 s');
    expect(formatDuration(7_500_000)).toBe('2 h 5 min');
    expect(formatDuration(3 * 86_400_000 + 4 * 3_600_000)).toBe('3 d 4 h');
    expect(formatDuration(-5)).toBe('0 s');
    expect(formatTime('2026-01-15T12:00:00.123Z')).toBe('2026-01-15 12:00:00 UTC');
    expect(formatTime(Date.UTC(2026, 0, 15, 12))).toBe('2026-01-15 12:00:00 UTC');
    expect(utcInputToIso('2026-01-15T12:30')).toBe('2026-01-15T12:30:00.000Z');
    expect(utcInputToIso('')).toBeUndefined();
  });
});

const amount = (n: number) => ({ unit: 'USD_MICROCENTS' as const, amount: n });
const budget = (
  b: Partial<Record<'allocated' | 'spent' | 'reserved' | 'debt' | 'overdraft', number>> & {
    bps?: number;
    overLimit?: boolean;
  },
): Budget => {
  const allocated = b.allocated ?? 1000;
  const spent = b.spent ?? 0;
  const reserved = b.reserved ?? 0;
  const debt = b.debt ?? 0;
  return {
    ledger_id: 'ldg_1',
    tenant_id: 'acme',
    scope: 'tenant:acme',
    scope_path: 'tenant:acme',
    unit: 'USD_MICROCENTS',
    status: 'ACTIVE',
    allocated: amount(allocated),
    spent: amount(spent),
    reserved: amount(reserved),
    debt: amount(debt),
    remaining: amount(allocated - spent - reserved - debt),
    overdraft_limit: amount(b.overdraft ?? 0),
    is_over_limit: b.overLimit ?? false,
    ...(b.bps !== undefined && { caps: { max_tokens: 10 }, caps_when_remaining_below_bps: b.bps }),
    created_at: '2026-01-15T12:00:00.000Z',
  };
};

describe('budget health', () => {
  it('is near from 80 % spent and reserved, over from 100 % or with debt', () => {
    expect(budgetHealth(budget({ spent: 500, reserved: 299 })).state).toBe('ok');
    expect(budgetHealth(budget({ spent: 500, reserved: 300 }))).toMatchObject({
      state: 'near',
      reasons: ['80 % used'],
    });
    expect(budgetHealth(budget({ spent: 1000 })).state).toBe('over');
    expect(budgetHealth(budget({ spent: 10, debt: 1 }))).toMatchObject({
      state: 'over',
      reasons: ['in debt'],
    });
    expect(budgetHealth(budget({ overLimit: true })).state).toBe('over');
    expect(budgetHealth(budget({ allocated: 0 })).state).toBe('ok');
    expect(budgetHealth(budget({ allocated: 0, spent: 5, overdraft: 10 })).state).toBe('over');
  });

  it('is near once the soft landing applies its caps', () => {
    expect(budgetHealth(budget({ spent: 700, bps: 2000 })).state).toBe('ok');
    expect(budgetHealth(budget({ spent: 700, reserved: 101, bps: 2000 }))).toMatchObject({
      state: 'near',
      reasons: ['80 % used', 'caps apply (soft landing)'],
    });
    expect(budgetHealth(budget({ spent: 300, reserved: 390, bps: 5000 })).reasons).toEqual([
      'caps apply (soft landing)',
    ]);
  });

  it('draws the bar over the allocation, or over what was used past it', () => {
    expect(barSegments(budget({ spent: 250, reserved: 250 }))).toEqual({
      spent: 25,
      reserved: 25,
      debt: 0,
      remaining: 50,
    });
    // Past the allocation through an overdraft: remaining is negative, the bar is what was used.
    const over = barSegments(budget({ allocated: 500, spent: 500, debt: 100, overdraft: 200 }));
    expect(over.spent + over.debt).toBeCloseTo(100);
    expect(over.remaining).toBe(0);
    expect(barSegments(budget({ allocated: 0 }))).toEqual({
      spent: 0,
      reserved: 0,
      debt: 0,
      remaining: 0,
    });
  });
});

describe('CSV', () => {
  it('quotes what needs quoting and defuses formulas', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
    expect(csvField('=HYPERLINK("http://x")')).toBe(`"'=HYPERLINK(""http://x"")"`);
    expect(csvField('+1')).toBe("'+1");
    expect(csvField('@sum')).toBe("'@sum");
    expect(csvField(-5)).toBe('-5');
    expect(csvField(undefined)).toBe('');
    expect(csvField({ a: 1 })).toBe('"{""a"":1}"');
    expect(toCsv(['a', 'b'], [[1, 'x']])).toBe('a,b\r\n1,x\r\n');
  });

  it('exports one row per audit entry, changes as JSON', () => {
    const entry: AuditEntry = {
      log_id: 'log_1',
      timestamp: '2026-01-15T12:00:00.000Z',
      tenant_id: 'acme',
      operation: 'releaseReservation',
      resource_type: 'reservation',
      resource_id: 'rsv_1',
      request_id: 'req-1',
      status: 200,
      metadata: { actor: 'admin', actor_type: 'admin', detail: { reason: 'stuck, retried' } },
    };

    const [header, row, end] = auditCsv([entry]).split('\r\n');

    expect(header).toBe(AUDIT_CSV_HEADER.join(','));
    expect(row).toBe(
      '2026-01-15T12:00:00.000Z,acme,admin,releaseReservation,reservation,rsv_1,200,req-1,log_1,,,"{""reason"":""stuck, retried""}"',
    );
    expect(end).toBe('');
  });
});

describe('the session', () => {
  const store = (): Store & { data: Map<string, string> } => {
    const data = new Map<string, string>();
    return {
      data,
      getItem: (k) => data.get(k) ?? null,
      setItem: (k, v) => void data.set(k, v),
      removeItem: (k) => void data.delete(k),
    };
  };

  it('keeps the key while the operator is active and forgets it after the idle timeout', () => {
    const s = store();
    signIn(s, 'the-key', 0);

    expect(currentKey(s, IDLE_TIMEOUT_MS - 1)).toBe('the-key');
    touch(s, IDLE_TIMEOUT_MS - 1);
    expect(currentKey(s, 2 * IDLE_TIMEOUT_MS - 2)).toBe('the-key');
    expect(currentKey(s, 2 * IDLE_TIMEOUT_MS - 1)).toBeUndefined();
    expect(s.data.size).toBe(0);
  });

  it('forgets the key on sign-out, and activity does not bring it back', () => {
    const s = store();
    signIn(s, 'the-key', 0);
    signOut(s);
    touch(s, 1);

    expect(currentKey(s, 2)).toBeUndefined();
    expect(s.data.size).toBe(0);
  });
});

describe('where the API is', () => {
  it('is the console’s base path, so a custom domain’s admin mapping works', () => {
    expect(apiBase('/console')).toBe('');
    expect(apiBase('/console/')).toBe('');
    expect(apiBase('/admin/console')).toBe('/admin');
  });
});

describe('an error as the console shows it', () => {
  const api = (status: number, code: string, details?: Record<string, unknown>) =>
    new ApiError({
      status,
      code: code as ApiError['code'],
      message: 'm',
      requestId: 'r-1',
      details,
    });

  it('is told by its kind, with the field of a validation error and the service’s words', () => {
    expect(describeError(new InputError('enter a whole number, 0 or more.', 'Anchor day'))).toEqual(
      {
        kind: 'input',
        title: 'Check the form.',
        message: 'enter a whole number, 0 or more.',
        field: 'Anchor day',
      },
    );
    expect(describeError(api(400, 'INVALID_REQUEST', { field: 'scope' }))).toMatchObject({
      kind: 'validation',
      field: 'scope',
      code: 'INVALID_REQUEST',
      requestId: 'r-1',
    });
    expect(
      describeError(api(400, 'INVALID_REQUEST', { issues: [{ field: 'amount', message: 'x' }] }))
        .field,
    ).toBe('amount');
    expect(describeError(api(401, 'UNAUTHORIZED')).kind).toBe('auth');
    expect(describeError(api(403, 'FORBIDDEN')).kind).toBe('forbidden');
    expect(describeError(api(404, 'NOT_FOUND')).kind).toBe('notFound');
    expect(describeError(api(409, 'DUPLICATE_RESOURCE')).kind).toBe('conflict');
    expect(describeError(api(410, 'RESERVATION_EXPIRED')).kind).toBe('conflict');
    expect(describeError(api(500, 'INTERNAL_ERROR')).kind).toBe('server');
    expect(
      describeError(
        new ApiError({ status: 503, code: 'INTERNAL_ERROR', message: 'm', retryAfter: 2 }),
      ),
    ).toMatchObject({ kind: 'busy', title: 'The service is busy: try again in 2 s.' });
    expect(describeError(new NetworkError(new TypeError('Failed to fetch')))).toMatchObject({
      kind: 'network',
      message: 'Failed to fetch',
    });
    // A bug of the console is no network failure.
    expect(describeError(new TypeError('x is undefined')).kind).toBe('console');
  });
});

describe('a new budget’s scope', () => {
  it('is pinned to the tenant on screen: only what follows tenant:<id> is typed', () => {
    expect(scopeUnder('acme', '')).toBe('tenant:acme');
    expect(scopeUnder('acme', ' / ')).toBe('tenant:acme');
    expect(scopeUnder('acme', '/workspace:prod')).toBe('tenant:acme/workspace:prod');
    expect(scopeUnder('acme', 'workspace:prod/agent:a')).toBe('tenant:acme/workspace:prod/agent:a');
    for (const other of ['tenant:globex', '/tenant:globex/workspace:x', 'TENANT:acme']) {
      expect(() => scopeUnder('acme', other)).toThrow(InputError);
    }
  });
});
