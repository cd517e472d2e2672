import { cursorSecret } from '../config/secrets.js';
import type { Ledger } from '../domain/budget.js';
import { balanceOf, budgetKey } from '../domain/budget.js';
import { type Caller, type Credential, requireOwnTenant } from '../domain/caller.js';
import { decodeCursor, encodeCursor } from '../domain/cursor.js';
import { DomainError, invalidRequest } from '../domain/errors.js';
import { derivedId } from '../domain/fingerprint.js';
import {
  isEffectivelyExpired,
  type Reservation,
  ReservationExpiredError,
  type ReservationSortKey,
  type ReservationStatus,
} from '../domain/reservation.js';
import { canonicalValue, LEVELS, type Level, segmentText } from '../domain/scopes.js';
import { queryLedgerIndex } from '../store/budgets/ledger-index.js';
import { queryReservations, readReservation } from '../store/reservation-queries.js';
import { viewBudgetsByKey } from './budget-reader.js';
import { allOf, type Page, type SortDirection, type SortKey, sortedPage } from './pages.js';

type SubjectFilters = Partial<Record<Level, string | undefined>>;

export type { Page } from './pages.js';

/** A ?tenant= filter may only name the caller's own tenant. */
function requireOwnTenantFilter(caller: Caller, tenant: string | undefined): void {
  if (tenant !== undefined) requireOwnTenant(caller, tenant, `tenant '${tenant}'`, { tenant });
}

/**
 * GET /v1/reservations/{id}. An EXPIRED reservation — or an ACTIVE one past its deadline that
 * the sweeper has not reached yet — answers 410 RESERVATION_EXPIRED, as the reference does;
 * its fields travel in `details` and it stays visible in listings.
 */
export async function getReservation(
  caller: Caller,
  reservationId: string,
  now: number,
): Promise<Reservation> {
  const r = await readReservation(reservationId);
  if (!r) throw new DomainError('NOT_FOUND', `reservation ${reservationId} does not exist`);
  requireOwnTenant(caller, r.tenant, `reservation ${reservationId}`);
  if (isEffectivelyExpired(r, now)) throw new ReservationExpiredError({ ...r, status: 'EXPIRED' });
  return r;
}

/** A time window, epoch ms, either end open. */
export interface Window {
  readonly from?: number | undefined;
  readonly to?: number | undefined;
}

export interface ReservationFilters extends SubjectFilters {
  readonly status?: ReservationStatus | undefined;
  readonly idempotencyKey?: string | undefined;
  /** On created_at_ms (`from` / `to`), expires_at_ms, finalized_at_ms: inclusive. */
  readonly created?: Window | undefined;
  readonly expires?: Window | undefined;
  readonly finalized?: Window | undefined;
  readonly sortBy?: ReservationSortKey | undefined;
  readonly sortDir?: SortDirection | undefined;
  readonly limit: number;
  readonly cursor?: string | undefined;
}

const inWindow = (w: Window | undefined, at: number | undefined): boolean =>
  w === undefined ||
  (w.from === undefined && w.to === undefined) ||
  (at !== undefined &&
    (w.from === undefined || at >= w.from) &&
    (w.to === undefined || at <= w.to));

/** A window whose start is after its end is refused, as the reference requires (400). */
function requireWindows(q: ReservationFilters): void {
  for (const [name, w] of [
    ['from', q.created],
    ['expires_from', q.expires],
    ['finalized_from', q.finalized],
  ] as const) {
    if (w?.from !== undefined && w.to !== undefined && w.from > w.to) {
      throw invalidRequest(`${name} is after its upper bound`, { field: name });
    }
  }
}

const reservationKey =
  (by: ReservationSortKey) =>
  (r: Reservation): SortKey => [
    {
      reservation_id: r.reservationId,
      tenant: r.tenant,
      scope_path: r.scopePath,
      status: r.status,
      reserved: r.reserved.amount,
      created_at_ms: r.createdAtMs,
      expires_at_ms: r.expiresAtMs,
    }[by],
    r.reservationId,
  ];

/**
 * The tenant a listing reads: a key's own (a ?tenant= may only name it); for the operator's
 * admin key, the one ?tenant= names, which it must (reservations are indexed per tenant).
 */
function listedTenant(reader: Credential, tenant: string | undefined): string {
  if (reader.kind === 'tenant') {
    requireOwnTenantFilter(reader, tenant);
    return reader.tenant;
  }
  if (tenant === undefined) {
    throw invalidRequest('query parameter tenant is required with the admin key', {
      field: 'tenant',
    });
  }
  return tenant;
}

/**
 * GET /v1/reservations: one index chosen by the most specific filter, newest first (a creation
 * window is a range of it); sorted otherwise as the reference sorts, in memory over at most
 * MAX_SORT_CANDIDATES matches.
 */
export async function listReservations(
  reader: Credential,
  q: ReservationFilters,
): Promise<Page<Reservation>> {
  const tenant = listedTenant(reader, q.tenant);
  requireWindows(q);
  const subjectLevels = LEVELS.slice(1);
  const matches = (r: Reservation) =>
    r.tenant === tenant &&
    (q.status === undefined || r.status === q.status) &&
    subjectLevels.every(
      (level) =>
        q[level] === undefined ||
        canonicalValue(level, r.subject[level] ?? '') === canonicalValue(level, q[level]),
    ) &&
    (q.idempotencyKey === undefined || r.idempotencyKey === q.idempotencyKey) &&
    inWindow(q.created, r.createdAtMs) &&
    inWindow(q.expires, r.expiresAtMs) &&
    // Only COMMITTED and RELEASED rows carry finalized_at_ms (the reference's rule).
    inWindow(
      q.finalized,
      r.status === 'COMMITTED' || r.status === 'RELEASED' ? r.finalizedAtMs : undefined,
    );

  if (q.idempotencyKey !== undefined) {
    // The id is derived from (tenant, key): recovering a lost id is one strongly consistent read.
    if (q.cursor !== undefined)
      throw invalidRequest('cursor is not valid with idempotency_key', { field: 'cursor' });
    const found = await readReservation(derivedId('rsv', tenant, q.idempotencyKey));
    return { items: found && matches(found) ? [found] : [] };
  }

  const { cursor, limit, sortBy, sortDir, ...filters } = q;
  const binding = { tenant, route: 'reservations', ...filters };
  const query = (after: string | undefined, size: number) =>
    queryReservations({
      tenant,
      status: q.status,
      subject: q,
      createdFrom: q.created?.from,
      createdTo: q.created?.to,
      after,
      limit: size,
      matches,
    });
  // Newest first is the index's own order.
  if (sortBy !== undefined && !(sortBy === 'created_at_ms' && sortDir !== 'asc')) {
    return sortedPage(
      { ...binding, sortBy },
      { limit, cursor, direction: sortDir ?? 'desc' },
      () =>
        allOf(async (after) => {
          const page = await query(after, 1_000);
          return { items: page.reservations, nextPosition: page.nextPosition };
        }, 'reservations'),
      reservationKey(sortBy),
    );
  }
  const secret = await cursorSecret();
  const after = cursor === undefined ? undefined : decodeCursor(secret, binding, cursor);
  const page = await query(after, limit);
  return {
    items: page.reservations,
    ...(page.nextPosition !== undefined && {
      nextCursor: encodeCursor(secret, binding, page.nextPosition),
    }),
  };
}

export interface BalanceFilters extends SubjectFilters {
  readonly includeChildren: boolean;
  readonly limit: number;
  readonly cursor?: string | undefined;
}

/**
 * GET /v1/balances. Each filter matches ledgers whose path has that segment. Without
 * include_children only ledgers at exactly the deepest filtered level are returned; with it,
 * every ledger below that level too.
 */
export async function listBalances(
  caller: Caller,
  q: BalanceFilters,
  now: number,
): Promise<Page<Ledger>> {
  requireOwnTenantFilter(caller, q.tenant);
  const given = LEVELS.filter((l) => q[l] !== undefined);
  const deepest = given[given.length - 1];
  if (!deepest) {
    throw invalidRequest(
      'at least one of tenant, workspace, app, workflow, agent, toolset is required',
      { field: 'query' },
    );
  }
  const segmentOf = (l: Level) =>
    segmentText({ kind: l, value: l === 'tenant' ? caller.tenant : canonicalValue(l, q[l] ?? '') });
  const { cursor, limit, ...filters } = q;
  const binding = { tenant: caller.tenant, route: 'balances', ...filters };
  const secret = await cursorSecret();
  const after = cursor === undefined ? undefined : decodeCursor(secret, binding, cursor);
  const page = await queryLedgerIndex({
    tenant: caller.tenant,
    segment: segmentOf(deepest),
    alsoContains: given
      .slice(0, -1)
      .filter((l) => l !== 'tenant')
      .map(segmentOf),
    level: q.includeChildren ? undefined : deepest,
    after,
    limit,
  });
  const budgets = await viewBudgetsByKey(page.entries, now);
  const last = page.entries[page.entries.length - 1];
  return {
    items: page.entries.flatMap((e) => {
      const b = budgets.get(budgetKey(e));
      return b ? [balanceOf(b)] : [];
    }),
    ...(page.hasMore && last && { nextCursor: encodeCursor(secret, binding, last.position) }),
  };
}
