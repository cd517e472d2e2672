import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import {
  type AccuracyTotals,
  addTotals,
  type KindPlan,
  NO_TOTALS,
  type TrackedKinds,
} from '../domain/accuracy.js';
import { sha256Hex } from '../domain/fingerprint.js';
import { dynamoClient, tableName } from './client.js';
import {
  ACCURACY_VERSION,
  partOf,
  totalsOf,
  totalsToAdd,
  trackedKindsOf,
} from './entities/accuracy.js';
import { and, attr, Placeholders, type TransactItem, update } from './expressions.js';
import { keys } from './keys.js';
import { getItems, transact } from './transact.js';

// A budget's estimate accuracy (store/entities/accuracy.ts), written by the stream consumer only
// (use-cases/estimate-accuracy.ts) and read by GET /v1/admin/budgets/accuracy.

/** Everything a budget's accuracy partition holds. */
export interface BudgetAccuracy {
  readonly tracked: TrackedKinds;
  readonly kinds: ReadonlyMap<string, AccuracyTotals>;
  readonly other: AccuracyTotals;
}

/** One Query of the budget's partition (a handful of small items); numbers read exactly. */
export async function readAccuracy(budget: string): Promise<BudgetAccuracy> {
  const kinds = new Map<string, AccuracyTotals>();
  let tracked = trackedKindsOf(undefined);
  let other = NO_TOTALS;
  let start: Record<string, never> | undefined;
  do {
    const out = await dynamoClient.send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': 'pk' },
        ExpressionAttributeValues: { ':pk': { S: keys.accuracy(budget, 'KINDS').pk } },
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    for (const raw of out.Items ?? []) {
      const item = unmarshall(raw, { wrapNumbers: true });
      const part = partOf(item);
      if (part?.part === 'KINDS') tracked = trackedKindsOf(item);
      if (part?.part === 'OTHER') other = totalsOf(item);
      if (part?.part === 'KIND') kinds.set(part.kind, totalsOf(item));
    }
    start = out.LastEvaluatedKey as Record<string, never> | undefined;
  } while (start);
  return { tracked, kinds, other };
}

/** The tracked kinds of each budget (one BatchGetItem), by budgetKey. */
export async function readTrackedKinds(
  budgets: readonly string[],
): Promise<Map<string, TrackedKinds>> {
  const items = await getItems(budgets.map((b) => keys.accuracy(b, 'KINDS')));
  return new Map(budgets.map((b) => [b, trackedKindsOf(items.get(keys.accuracy(b, 'KINDS').pk))]));
}

/** ADD totals to one item of a budget's accuracy, creating it if need be. */
function addTo(
  budget: string,
  part: 'OTHER' | { readonly kind: string },
  t: AccuracyTotals,
): TransactItem {
  return update(keys.accuracy(budget, part), {
    set: {
      type: 'accuracy',
      v: ACCURACY_VERSION,
      ...(typeof part !== 'string' && { kind: part.kind }),
      last_ms: t.lastAtMs,
    },
    increment: totalsToAdd(t),
  });
}

/**
 * A budget's admissions and evictions (domain/accuracy.ts planKinds), conditioned on its kinds'
 * version as read: the evicted kinds' items go (each conditioned on its counts as read, so no
 * concurrent ADD is lost) and their totals move to OTHER. 'stale': something moved; plan again.
 */
export async function applyKindPlan(
  budget: string,
  tracked: TrackedKinds,
  plan: KindPlan,
  evicted: ReadonlyMap<string, AccuracyTotals>,
  now: number,
): Promise<'written' | 'stale'> {
  const p = new Placeholders();
  const kinds = p.name('kinds');
  // A kind is a key of the `kinds` map: its own placeholder, one path segment whatever it holds.
  const kindPath = (prefix: string, i: number, kind: string) => {
    p.names[`#${prefix}${i}`] = kind;
    return `${kinds}.#${prefix}${i}`;
  };
  const sets = [
    `${p.name('type')} = ${p.value('type', 'accuracy-kinds')}`,
    `${p.name('v')} = ${p.value('v', ACCURACY_VERSION)}`,
    `${p.name('ver')} = ${p.value('ver', tracked.version + 1)}`,
    ...(tracked.version === 0
      ? [`${kinds} = ${p.value('kinds', Object.fromEntries(plan.admitted.map((k) => [k, now])))}`]
      : plan.admitted.map((k, i) => `${kindPath('a', i, k)} = ${p.value('at', now)}`)),
  ];
  const removed = plan.evicted.map((k, i) => kindPath('e', i, k));
  const condition =
    tracked.version === 0 ? attr('ver').notExists()(p) : attr('ver').eq(tracked.version)(p);
  const directory: TransactItem = {
    Update: {
      TableName: tableName(),
      Key: keys.accuracy(budget, 'KINDS'),
      UpdateExpression: `SET ${sets.join(', ')}${removed.length > 0 ? ` REMOVE ${removed.join(', ')}` : ''}`,
      ConditionExpression: condition,
      ExpressionAttributeNames: p.names,
      ExpressionAttributeValues: p.values,
    },
  };
  const moves = plan.evicted.flatMap((kind) => {
    const t = evicted.get(kind) ?? NO_TOTALS;
    return [
      {
        Delete: {
          TableName: tableName(),
          Key: keys.accuracy(budget, { kind }),
          ...deleteCondition(t),
        },
      },
    ];
  });
  const folded = plan.evicted.reduce(
    (sum, k) => addTotals(sum, evicted.get(k) ?? NO_TOTALS),
    NO_TOTALS,
  );
  const items = [
    directory,
    ...moves,
    ...(plan.evicted.length > 0 ? [addTo(budget, 'OTHER', folded)] : []),
  ];
  return (await transact(items, 'settle')).kind === 'committed' ? 'written' : 'stale';
}

/** An evicted kind's item goes only as it was read: its counts are what OTHER receives. */
function deleteCondition(t: AccuracyTotals) {
  const p = new Placeholders();
  const expression = and(
    attr('settled').eq(t.settled),
    attr('released').eq(t.released),
    attr('expired').eq(t.expired),
  )(p);
  return {
    ConditionExpression: expression,
    ExpressionAttributeNames: p.names,
    ExpressionAttributeValues: p.values,
  };
}

/** What one batch adds to one budget: per kind counted on its own, and to OTHER. */
export interface AccuracyAddition {
  readonly budget: string;
  readonly own: ReadonlyMap<string, AccuracyTotals>;
  readonly other?: AccuracyTotals | undefined;
}

/** Budgets per transaction: each takes at most TRACKED_KINDS + 2 items, a transaction 100. */
const BUDGETS_PER_TRANSACTION = 5;

/**
 * Adds a batch's totals, a few budgets per transaction. Each budget's kinds item is touched
 * (their last settlement, and the condition that each kind is still tracked: an eviction by
 * another batch since the plan makes it 'stale'). `batchId` names the stream records: each
 * transaction carries a ClientRequestToken derived from it and its items, so a batch delivered
 * again within DynamoDB's 10-minute window adds nothing twice.
 */
export async function addAccuracy(
  additions: readonly AccuracyAddition[],
  batchId: string,
): Promise<'written' | 'stale'> {
  for (let i = 0; i < additions.length; i += BUDGETS_PER_TRANSACTION) {
    const items = additions.slice(i, i + BUDGETS_PER_TRANSACTION).flatMap(additionItems);
    const token = sha256Hex(`${batchId}\n${JSON.stringify(items, jsonBigint)}`).slice(0, 36);
    const outcome = await transact(items, 'settle', undefined, token);
    if (outcome.kind !== 'committed') return 'stale';
  }
  return 'written';
}

const jsonBigint = (_: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v);

function additionItems(a: AccuracyAddition): TransactItem[] {
  const items: TransactItem[] = [];
  if (a.own.size > 0) {
    const p = new Placeholders();
    const kinds = p.name('kinds');
    const sets: string[] = [];
    const exists: string[] = [];
    for (const [i, [kind, t]] of [...a.own].entries()) {
      const name = `#k${i}`;
      p.names[name] = kind;
      sets.push(`${kinds}.${name} = ${p.value(`at${i}`, t.lastAtMs)}`);
      exists.push(`attribute_exists(${kinds}.${name})`);
    }
    items.push({
      Update: {
        TableName: tableName(),
        Key: keys.accuracy(a.budget, 'KINDS'),
        UpdateExpression: `SET ${sets.join(', ')}`,
        ConditionExpression: exists.join(' AND '),
        ExpressionAttributeNames: p.names,
        ExpressionAttributeValues: p.values,
      },
    });
    for (const [kind, t] of a.own) items.push(addTo(a.budget, { kind }, t));
  }
  if (a.other) items.push(addTo(a.budget, 'OTHER', a.other));
  return items;
}
