import { cursorSecret } from '../config.js';
import { decodeCursor, encodeCursor } from '../domain/cursor.js';
import { DomainError, invalidRequest } from '../domain/errors.js';
import { derivedId } from '../domain/fingerprint.js';
import { type Reservation, settleDeadline } from '../domain/reservation.js';
import { LEVELS, type Level, segmentText } from '../domain/scopes.js';
import type { TenantCaller } from '../http/auth.js';
import type { Reply } from '../http/handler.js';
import type { ListBalancesQuery, ListReservationsQuery } from '../http/schemas/runtime.js';
import { balanceView, reservationView } from '../http/views.js';
import { listPartitions } from '../store/keys.js';
import { getLedgerSet, queryLedgerIndex } from '../store/ledgers.js';
import { queryReservations, getReservation as readReservation } from '../store/reservations.js';
import type { IndexName } from '../store/table.js';

const SUBJECT_LEVELS = LEVELS.slice(1) as Exclude<Level, 'tenant'>[];
const INDEX_OF: Record<Exclude<Level, 'tenant'>, IndexName> = {
  workspace: 'byWorkspace',
  app: 'byApp',
  workflow: 'byWorkflow',
  agent: 'byAgent',
  toolset: 'byToolset',
};

function checkTenantFilter(caller: TenantCaller, tenant: string | undefined): void {
  if (tenant !== undefined && tenant !== caller.tenant) {
    throw new DomainError('FORBIDDEN', `tenant '${tenant}' is not the API key's tenant`, {
      tenant,
    });
  }
}

/**
 * GET /v1/reservations/{id}. An EXPIRED reservation — or an ACTIVE one past its deadline that
 * the sweeper has not reached yet — answers 410 RESERVATION_EXPIRED, as the reference does;
 * its fields travel in `details` and it stays visible in listings.
 */
export async function getReservation(
  caller: TenantCaller,
  reservationId: string,
  now: number,
): Promise<Reply> {
  const found = await readReservation(reservationId);
  if (!found) throw new DomainError('NOT_FOUND', `reservation ${reservationId} does not exist`);
  const r = found.reservation;
  if (r.tenant !== caller.tenant)
    throw new DomainError('FORBIDDEN', `reservation ${reservationId} belongs to another tenant`);
  if (r.status === 'EXPIRED' || (r.status === 'ACTIVE' && now >= settleDeadline(r))) {
    throw new DomainError('RESERVATION_EXPIRED', `reservation ${reservationId} has expired`, {
      reservation: reservationView({ ...r, status: 'EXPIRED' }, { withMetadata: true }),
    });
  }
  return { statusCode: 200, body: reservationView(r, { withMetadata: true }) };
}

/** GET /v1/reservations: one index chosen by the most specific filter, newest first. */
export async function listReservations(
  caller: TenantCaller,
  q: ListReservationsQuery,
): Promise<Reply> {
  checkTenantFilter(caller, q.tenant);
  const matches = (r: Reservation) =>
    r.tenant === caller.tenant &&
    (q.status === undefined || r.status === q.status) &&
    SUBJECT_LEVELS.every((level) => q[level] === undefined || r.subject[level] === q[level]) &&
    (q.idempotency_key === undefined || r.idempotencyKey === q.idempotency_key);

  if (q.idempotency_key !== undefined) {
    // The id is derived from (tenant, key): recovering a lost id is one strongly consistent read.
    if (q.cursor !== undefined)
      throw invalidRequest('cursor is not valid with idempotency_key', { field: 'cursor' });
    const found = await readReservation(derivedId('rsv', caller.tenant, q.idempotency_key));
    const hits = found && matches(found.reservation) ? [found.reservation] : [];
    return {
      statusCode: 200,
      body: {
        reservations: hits.map((r) => reservationView(r, { withMetadata: false })),
        has_more: false,
      },
    };
  }

  const { cursor, limit, ...filters } = q;
  const binding = { tenant: caller.tenant, route: 'reservations', ...filters };
  const after = cursor === undefined ? undefined : decodeCursor(cursorSecret(), binding, cursor);
  const level = [...SUBJECT_LEVELS].reverse().find((l) => q[l] !== undefined);
  const source = level
    ? {
        index: INDEX_OF[level],
        partitionAttribute: `${level}_pk`,
        partition: listPartitions.level(caller.tenant, level, q[level] ?? ''),
      }
    : q.status
      ? {
          index: 'byStatus' as const,
          partitionAttribute: 'status_pk',
          partition: listPartitions.status(caller.tenant, q.status),
        }
      : {
          index: 'byTenant' as const,
          partitionAttribute: 'tenant_pk',
          partition: listPartitions.tenant(caller.tenant),
        };
  const page = await queryReservations({ ...source, after, limit, matches });
  return {
    statusCode: 200,
    body: {
      reservations: page.reservations.map((r) => reservationView(r, { withMetadata: false })),
      has_more: page.nextPosition !== undefined,
      ...(page.nextPosition !== undefined && {
        next_cursor: encodeCursor(cursorSecret(), binding, page.nextPosition),
      }),
    },
  };
}

/**
 * GET /v1/balances. Each filter matches ledgers whose path has that segment. Without
 * include_children only ledgers at exactly the deepest filtered level are returned; with it,
 * every ledger below that level too.
 */
export async function listBalances(caller: TenantCaller, q: ListBalancesQuery): Promise<Reply> {
  checkTenantFilter(caller, q.tenant);
  const given = LEVELS.filter((l) => q[l] !== undefined);
  const deepest = given[given.length - 1];
  if (!deepest) {
    throw invalidRequest(
      'at least one of tenant, workspace, app, workflow, agent, toolset is required',
      { field: 'query' },
    );
  }
  const segmentOf = (l: Level) =>
    segmentText({ kind: l, value: l === 'tenant' ? caller.tenant : (q[l] ?? '') });
  const { cursor, limit, ...filters } = q;
  const binding = { tenant: caller.tenant, route: 'balances', ...filters };
  const after = cursor === undefined ? undefined : decodeCursor(cursorSecret(), binding, cursor);
  const page = await queryLedgerIndex({
    tenant: caller.tenant,
    segment: segmentOf(deepest),
    alsoContains: given
      .slice(0, -1)
      .filter((l) => l !== 'tenant')
      .map(segmentOf),
    level: q.include_children ? undefined : deepest,
    after,
    limit,
  });
  const ledgers = await getLedgerSet(page.entries);
  const last = page.entries[page.entries.length - 1];
  return {
    statusCode: 200,
    body: {
      balances: page.entries.flatMap((e) => {
        const l = ledgers.get(`${e.scope}#${e.unit}`);
        return l ? [balanceView(l)] : [];
      }),
      has_more: page.hasMore,
      ...(page.hasMore &&
        last && { next_cursor: encodeCursor(cursorSecret(), binding, last.position) }),
    },
  };
}
