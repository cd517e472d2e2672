/**
 * The table as data: read by the CDK stack and by the local runner / tests to create it,
 * so both build exactly the same keys and indexes.
 */
export interface IndexDefinition {
  readonly name: string;
  readonly partitionKey: string;
  readonly sortKey: string;
  readonly projection: 'KEYS_ONLY' | 'ALL';
}

export const tableDefinition = {
  partitionKey: 'pk',
  sortKey: 'sk',
  /** Epoch seconds; idempotency and refusal records carry it (retention: docs/idempotency.md). */
  timeToLiveAttribute: 'ttl',
  /** The stream budget events are derived from (docs/decisions.md § Events and webhooks). */
  stream: 'NEW_AND_OLD_IMAGES',
  indexes: [
    // Reservation listings. KEYS_ONLY: a status change rewrites no index copy, and pages are
    // completed with one strongly consistent BatchGetItem. byStatus also holds a tenant's whole
    // listing (its four statuses merged) and every tenant's events (`EVENTS~k`): no byTenant.
    { name: 'byStatus', partitionKey: 'status_pk', sortKey: 'list_sk', projection: 'KEYS_ONLY' },
    {
      name: 'byWorkspace',
      partitionKey: 'workspace_pk',
      sortKey: 'list_sk',
      projection: 'KEYS_ONLY',
    },
    { name: 'byApp', partitionKey: 'app_pk', sortKey: 'list_sk', projection: 'KEYS_ONLY' },
    {
      name: 'byWorkflow',
      partitionKey: 'workflow_pk',
      sortKey: 'list_sk',
      projection: 'KEYS_ONLY',
    },
    { name: 'byAgent', partitionKey: 'agent_pk', sortKey: 'list_sk', projection: 'KEYS_ONLY' },
    { name: 'byToolset', partitionKey: 'toolset_pk', sortKey: 'list_sk', projection: 'KEYS_ONLY' },
    // Sparse: only ACTIVE reservations carry due_pk, sharded so no partition gets hot. Keys only:
    // a reserve writes a small entry, and the sweeper reads the items it expires consistently.
    { name: 'dueForExpiry', partitionKey: 'due_pk', sortKey: 'due_sk', projection: 'KEYS_ONLY' },
    // The operator's listings: tenants, API keys, and the audit trail across tenants. Sparse and
    // small (only those items carry dir_pk; none is written per reservation), so ALL: a page is
    // one Query.
    { name: 'directory', partitionKey: 'dir_pk', sortKey: 'dir_sk', projection: 'ALL' },
  ] satisfies IndexDefinition[],
} as const;

export type IndexName = (typeof tableDefinition.indexes)[number]['name'];

/**
 * The item types events come from (store/stream.ts decodes them): the filters of the consumer's
 * event source mapping (infra/jobs-stack.ts), so Lambda is not invoked for the others.
 */
export const EVENT_ITEM_TYPES = {
  ledgers: ['ledger', 'ledger-shard', 'ledger-period'],
  reservation: 'reservation',
  /** Reservations turned into one of these make an event (expired; committed over estimate). */
  reservationStatuses: ['EXPIRED', 'COMMITTED'],
  refusal: 'refusal',
  /** Every audit record: lifecycle events, refunds' custom.refund (domain/audit-events.ts). */
  audit: 'audit',
} as const;
