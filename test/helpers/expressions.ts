/** The expression fields of an Update, ConditionCheck or Put, as the store builds them. */
interface Expressions {
  readonly ConditionExpression?: string | undefined;
  readonly UpdateExpression?: string | undefined;
  readonly ExpressionAttributeNames?: Record<string, string> | undefined;
  readonly ExpressionAttributeValues?: Record<string, unknown> | undefined;
}

/**
 * A write's expressions with their names and values written in (values as JSON): what DynamoDB
 * evaluates, e.g. `attribute_exists(pk) AND remaining >= 10`, whatever the placeholders.
 */
export function readable(action: Expressions | undefined) {
  const names = action?.ExpressionAttributeNames ?? {};
  const values = action?.ExpressionAttributeValues ?? {};
  const fill = (text: string | undefined) =>
    text?.replace(/[#:][A-Za-z0-9_]+/g, (placeholder) =>
      placeholder.startsWith('#')
        ? (names[placeholder] ?? placeholder)
        : placeholder in values
          ? JSON.stringify(values[placeholder])
          : placeholder,
    );
  return { condition: fill(action?.ConditionExpression), update: fill(action?.UpdateExpression) };
}

/** The attributes an update's SET assigns a value to (not those it adds to), with the values. */
export function setValues(action: Expressions | undefined): Record<string, unknown> {
  const names = action?.ExpressionAttributeNames ?? {};
  const values = action?.ExpressionAttributeValues ?? {};
  const set = /SET (.*?)(?: ADD | REMOVE |$)/.exec(action?.UpdateExpression ?? '')?.[1] ?? '';
  return Object.fromEntries(
    set
      .split(', ')
      .map((assignment) => /^(#\w+) = (:\w+)$/.exec(assignment))
      .flatMap((m) => (m?.[1] && m[2] ? [[names[m[1]] ?? m[1], values[m[2]]]] : [])),
  );
}
