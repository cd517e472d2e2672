import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Unit } from '../../domain/amounts.js';
import { type BudgetRef, budgetKey } from '../../domain/budget.js';
import { documentClient, tableName } from '../client.js';
import { attr, type Item, queryExpressions } from '../expressions.js';
import { hashOf } from '../keys.js';

// The debt watch: the budgets that have ever gone into debt, so the operator's overview and the
// cross-tenant listing of budgets in debt or over their limit read those few, never every
// budget (docs/table-design.md). A write that adds debt marks the item it lands on with keys of
// the sparse, keys-only `dueForExpiry` index, in partitions of their own (`DEBT#<k>`: the
// sweeper reads only `DUE#<k>`). An index write happens only when the keys are first set: a
// budget already marked costs nothing more. A mark outlives a repaid debt; readers check the
// budget as it is.

export const WATCH_SPREAD = 4;
const watchPartition = (k: number) => `DEBT#${k}`;

/** Set on a ledger item (or shard) by a change that adds debt to it. */
export function debtMark(ref: BudgetRef): Item {
  const key = budgetKey(ref);
  return { due_pk: watchPartition(hashOf(key) % WATCH_SPREAD), due_sk: key };
}

/** Budgets the watch holds, at most `limit` (by budget key), each once. */
export async function watchedBudgets(limit: number): Promise<BudgetRef[]> {
  const pages = await Promise.all(
    Array.from({ length: WATCH_SPREAD }, async (_, k) => {
      const keys: string[] = [];
      let start: Record<string, unknown> | undefined;
      do {
        const page = await documentClient.send(
          new QueryCommand({
            TableName: tableName(),
            IndexName: 'dueForExpiry',
            ...queryExpressions(attr('due_pk').eq(watchPartition(k))),
            ExclusiveStartKey: start,
          }),
        );
        keys.push(...(page.Items ?? []).map((i) => String(i.due_sk)));
        start = page.LastEvaluatedKey;
      } while (start && keys.length < limit);
      return keys;
    }),
  );
  const unique = [...new Set(pages.flat())].sort().slice(0, limit);
  return unique.map((key) => {
    const at = key.lastIndexOf('#');
    return { scope: key.slice(0, at), unit: key.slice(at + 1) as Unit };
  });
}
