import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { tableName } from './client.js';

// Condition and update expressions built from parts, in the manner of DynamoDB-Toolbox
// (`attr('remaining').gte(10)`, `{ add: { reserved: 10 } }`): each attribute gets its name
// placeholder (`#remaining`) and each value its own (`:remaining`, then `:remaining_2`, …) as
// it is used, so no builder spells placeholders by hand and DynamoDB's reserved words never bite.

export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];
export type Item = Record<string, unknown>;
export type Key = { readonly pk: string; readonly sk: string };

/** The names and values one expression (or one command's expressions) uses. */
export class Placeholders {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};

  name(attribute: string): string {
    const placeholder = `#${attribute.replace(/\W/g, '_')}`;
    this.names[placeholder] = attribute;
    return placeholder;
  }

  value(attribute: string, value: unknown): string {
    const base = `:${attribute.replace(/\W/g, '_')}`;
    let placeholder = base;
    for (let n = 2; placeholder in this.values; n++) placeholder = `${base}_${n}`;
    this.values[placeholder] = value;
    return placeholder;
  }
}

/** A condition, written out with the placeholders of the command it goes into. */
export type Condition = (p: Placeholders) => string;

/** Conditions on one attribute. */
export const attr = (name: string) => {
  const compare =
    (op: string) =>
    (value: unknown): Condition =>
    (p) =>
      `${p.name(name)} ${op} ${p.value(name, value)}`;
  return {
    exists: (): Condition => (p) => `attribute_exists(${p.name(name)})`,
    notExists: (): Condition => (p) => `attribute_not_exists(${p.name(name)})`,
    eq: compare('='),
    ne: compare('<>'),
    lt: compare('<'),
    lte: compare('<='),
    gt: compare('>'),
    gte: compare('>='),
    between:
      (low: unknown, high: unknown): Condition =>
      (p) =>
        `${p.name(name)} BETWEEN ${p.value(name, low)} AND ${p.value(name, high)}`,
    beginsWith:
      (prefix: string): Condition =>
      (p) =>
        `begins_with(${p.name(name)}, ${p.value(name, prefix)})`,
    contains:
      (value: unknown): Condition =>
      (p) =>
        `contains(${p.name(name)}, ${p.value(name, value)})`,
  };
};

/**
 * A running total as read: equal to `value`, or absent where it reads as 0 (it is written only
 * once it is not).
 */
export const totalAsRead = (name: string, value: number): Condition =>
  value === 0 ? attr(name).notExists() : attr(name).eq(value);

type Part = Condition | false | undefined;

/** Every part (those given as false or undefined left out). */
export const and =
  (...parts: Part[]): Condition =>
  (p) =>
    parts
      .filter((c): c is Condition => typeof c === 'function')
      .map((c) => c(p))
      .join(' AND ');

/** Any part, in parentheses. */
export const or =
  (...parts: Condition[]): Condition =>
  (p) =>
    `(${parts.map((c) => c(p)).join(' OR ')})`;

/** What an Update does: attributes set, counters added to, string sets grown, attributes removed. */
export interface UpdateParts {
  /** SET a = value; an undefined value is left out. */
  readonly set?: Readonly<Record<string, unknown>>;
  /** SET a = a + delta. */
  readonly add?: Readonly<Record<string, number>>;
  /** SET a = b: the value another attribute of the item has as the write applies. */
  readonly copy?: Readonly<Record<string, string>>;
  /** ADD a :set (a string set). */
  readonly addToSet?: Readonly<Record<string, ReadonlySet<string>>>;
  /** ADD a :n (a number: an absent attribute starts at 0, unlike `add`). */
  readonly increment?: Readonly<Record<string, number | bigint>>;
  /** DELETE a :set (elements of a string set; the set goes once empty). */
  readonly deleteFromSet?: Readonly<Record<string, ReadonlySet<string>>>;
  readonly remove?: readonly string[];
}

/** The update expression of `parts`, with its placeholders in `p`. */
export function updateExpression(parts: UpdateParts, p: Placeholders): string {
  const sets = [
    ...Object.entries(parts.set ?? {})
      .filter(([, v]) => v !== undefined)
      .map(([a, v]) => `${p.name(a)} = ${p.value(a, v)}`),
    ...Object.entries(parts.add ?? {}).map(([a, d]) => {
      const name = p.name(a);
      return `${name} = ${name} + ${p.value(a, d)}`;
    }),
    ...Object.entries(parts.copy ?? {}).map(([a, from]) => `${p.name(a)} = ${p.name(from)}`),
  ];
  const adds = [
    ...Object.entries(parts.addToSet ?? {}),
    ...Object.entries(parts.increment ?? {}),
  ].map(([a, v]) => `${p.name(a)} ${p.value(a, v)}`);
  const deletes = Object.entries(parts.deleteFromSet ?? {}).map(
    ([a, v]) => `${p.name(a)} ${p.value(a, v)}`,
  );
  const removes = (parts.remove ?? []).map((a) => p.name(a));
  return [
    sets.length > 0 && `SET ${sets.join(', ')}`,
    adds.length > 0 && `ADD ${adds.join(', ')}`,
    deletes.length > 0 && `DELETE ${deletes.join(', ')}`,
    removes.length > 0 && `REMOVE ${removes.join(', ')}`,
  ]
    .filter(Boolean)
    .join(' ');
}

export interface WriteOptions {
  readonly condition?: Condition | undefined;
  /**
   * On a failed condition, the item as it was comes back in the cancellation (ALL_OLD): the
   * evidence of a refusal, or the outcome a duplicate replays.
   */
  readonly returnOld?: boolean;
}

const withValues = (p: Placeholders) =>
  Object.keys(p.values).length > 0 ? { ExpressionAttributeValues: p.values } : {};

/** An Update of one item inside a transaction. */
export function update(key: Key, parts: UpdateParts, options: WriteOptions = {}): TransactItem {
  const p = new Placeholders();
  const expression = updateExpression(parts, p);
  const condition = options.condition?.(p);
  return {
    Update: {
      TableName: tableName(),
      Key: key,
      UpdateExpression: expression,
      ...(condition && { ConditionExpression: condition }),
      ExpressionAttributeNames: p.names,
      ...withValues(p),
      ...(options.returnOld && { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const }),
    },
  };
}

/** A ConditionCheck of one item inside a transaction. */
export function conditionCheck(
  key: Key,
  condition: Condition,
  options: Pick<WriteOptions, 'returnOld'> = {},
): TransactItem {
  const p = new Placeholders();
  const expression = condition(p);
  return {
    ConditionCheck: {
      TableName: tableName(),
      Key: key,
      ConditionExpression: expression,
      ExpressionAttributeNames: p.names,
      ...withValues(p),
      ...(options.returnOld && { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const }),
    },
  };
}

/** A Delete of one item inside a transaction, on its condition. */
export function remove(key: Key, condition: Condition): TransactItem {
  const p = new Placeholders();
  const expression = condition(p);
  return {
    Delete: {
      TableName: tableName(),
      Key: key,
      ConditionExpression: expression,
      ExpressionAttributeNames: p.names,
      ...withValues(p),
    },
  };
}

/**
 * A Put only where no item has that key; when one does, the existing item comes back (ALL_OLD):
 * for a record that doubles as idempotency record, that item is the outcome to replay.
 */
export const putIfAbsentInput = (item: Item) => {
  const p = new Placeholders();
  return {
    TableName: tableName(),
    Item: item,
    ConditionExpression: attr('pk').notExists()(p),
    ExpressionAttributeNames: p.names,
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
  };
};

export const putIfAbsent = (item: Item): TransactItem => ({ Put: putIfAbsentInput(item) });

/**
 * The expressions of a Query: its key condition, its filter when it has one, and their
 * placeholders (one set for both).
 */
export function queryExpressions(key: Condition, filter?: Condition) {
  const p = new Placeholders();
  const keyCondition = key(p);
  const filterExpression = filter?.(p);
  return {
    KeyConditionExpression: keyCondition,
    ...(filterExpression && { FilterExpression: filterExpression }),
    ExpressionAttributeNames: p.names,
    ...withValues(p),
  };
}
