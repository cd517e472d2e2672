/**
 * How our OpenAPI document differs from the reference's for the operations both have, in the
 * terms a client generated from either notices: paths and methods, success and error statuses,
 * accepted key headers, parameters, and the bodies' field names, required fields, types, enum
 * values and defaults. Each difference is one line, `<operationId> <where>: <what>`.
 *
 * Directions differ: a request we refuse where the reference accepts is a difference (a field
 * we require that it leaves optional, an enum value we refuse); a response that could fail the
 * reference's schema is one (a field it does not know, one it requires that we omit).
 */

type Json = { [key: string]: unknown };
type Direction = 'request' | 'response';

/** A field the reference has as optional, which no answer of ours carries. */
const NEVER_SENT = ': never sent';

const isObject = (v: unknown): v is Json =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** Follows `$ref`s within the document; a sibling of a `$ref` (a default) applies over it. */
function deref(document: Json, schema: unknown): Json {
  let current = isObject(schema) ? schema : {};
  for (let hops = 0; typeof current.$ref === 'string' && hops < 20; hops++) {
    const { $ref, ...siblings } = current;
    let target: unknown = document;
    for (const part of $ref.replace(/^#\//, '').split('/')) {
      target = isObject(target) ? target[part.replaceAll('~1', '/').replaceAll('~0', '~')] : {};
    }
    current = { ...(isObject(target) ? target : {}), ...siblings };
  }
  return current;
}

const typesOf = (s: Json): string[] =>
  Array.isArray(s.type)
    ? (s.type as string[])
    : typeof s.type === 'string'
      ? [s.type]
      : s.properties
        ? ['object']
        : [];
const enumOf = (s: Json): unknown[] | undefined =>
  Array.isArray(s.enum) ? s.enum : s.const !== undefined ? [s.const] : undefined;
/** The shapes a schema allows: its variants, for a union. */
const variantsOf = (s: Json): unknown[] | undefined =>
  Array.isArray(s.oneOf) ? s.oneOf : Array.isArray(s.anyOf) ? s.anyOf : undefined;

interface Side {
  readonly document: Json;
  readonly schema: unknown;
}

export function schemaDifferences(
  ours: Side,
  theirs: Side,
  direction: Direction,
  at: string,
): string[] {
  const o = deref(ours.document, ours.schema);
  const t = deref(theirs.document, theirs.schema);
  // Each shape we may send (or accept) is compared with the reference's one; an optional
  // field is "never sent" only when no shape sends it.
  const variants = variantsOf(o);
  if (variants && !typesOf(o).length) {
    const each = variants.map((v) =>
      schemaDifferences({ ...ours, schema: v }, theirs, direction, at),
    );
    const all = [...new Set(each.flat())];
    return all.filter((d) => !d.endsWith(NEVER_SENT) || each.every((list) => list.includes(d)));
  }
  const differences: string[] = [];
  const ourTypes = typesOf(o);
  const theirTypes = typesOf(t);
  if (ourTypes.length > 0 && theirTypes.length > 0) {
    const foreign =
      direction === 'response'
        ? ourTypes.filter((type) => !theirTypes.includes(type))
        : theirTypes.filter((type) => type !== 'null' && !ourTypes.includes(type));
    if (foreign.length > 0) {
      differences.push(
        `${at}: type ${ourTypes.join('|')}, the reference's ${theirTypes.join('|')}`,
      );
      return differences;
    }
  }
  const ourEnum = enumOf(o);
  const theirEnum = enumOf(t);
  if (theirEnum && direction === 'response') {
    const extra = (ourEnum ?? []).filter((v) => !theirEnum.includes(v));
    if (!ourEnum) differences.push(`${at}: any value, the reference's are ${theirEnum.join('|')}`);
    else if (extra.length > 0) differences.push(`${at}: also ${extra.join('|')}`);
  }
  if (ourEnum && direction === 'request') {
    const refused = (theirEnum ?? []).filter((v) => !ourEnum.includes(v));
    if (!theirEnum) differences.push(`${at}: only ${ourEnum.join('|')}, the reference's any value`);
    else if (refused.length > 0) differences.push(`${at}: refuses ${refused.join('|')}`);
  }
  if (direction === 'request' && o.default !== undefined && t.default !== undefined) {
    if (JSON.stringify(o.default) !== JSON.stringify(t.default)) {
      differences.push(
        `${at}: default ${JSON.stringify(o.default)}, the reference's ${JSON.stringify(t.default)}`,
      );
    }
  }
  if (ourTypes.includes('object') && theirTypes.includes('object')) {
    differences.push(...objectDifferences(ours, o, theirs, t, direction, at));
  }
  if (ourTypes.includes('array') && theirTypes.includes('array')) {
    differences.push(
      ...schemaDifferences(
        { ...ours, schema: o.items },
        { ...theirs, schema: t.items },
        direction,
        `${at}[]`,
      ),
    );
  }
  return differences;
}

function objectDifferences(
  ours: Side,
  o: Json,
  theirs: Side,
  t: Json,
  direction: Direction,
  at: string,
): string[] {
  const differences: string[] = [];
  const ourProperties = (o.properties ?? {}) as Json;
  const theirProperties = (t.properties ?? {}) as Json;
  const ourRequired = (o.required ?? []) as string[];
  const theirRequired = (t.required ?? []) as string[];
  for (const name of Object.keys(ourProperties)) {
    if (name in theirProperties) continue;
    if (direction === 'response' || t.additionalProperties === false) {
      differences.push(`${at}.${name}: not in the reference`);
    }
  }
  for (const name of Object.keys(theirProperties)) {
    if (name in ourProperties) continue;
    if (direction === 'response') {
      differences.push(
        theirRequired.includes(name)
          ? `${at}.${name}: required by the reference, never sent`
          : `${at}.${name}${NEVER_SENT}`,
      );
    } else if (o.additionalProperties === false) {
      differences.push(`${at}.${name}: refused`);
    } else {
      differences.push(`${at}.${name}: ignored`);
    }
  }
  for (const name of Object.keys(ourProperties)) {
    if (!(name in theirProperties)) continue;
    const ourRequires = ourRequired.includes(name);
    const theirRequires = theirRequired.includes(name);
    if (direction === 'response' && theirRequires && !ourRequires) {
      differences.push(`${at}.${name}: required by the reference, optional here`);
    }
    if (direction === 'request' && ourRequires && !theirRequires) {
      differences.push(`${at}.${name}: optional in the reference, required here`);
    }
    differences.push(
      ...schemaDifferences(
        { ...ours, schema: ourProperties[name] },
        { ...theirs, schema: theirProperties[name] },
        direction,
        `${at}.${name}`,
      ),
    );
  }
  // A map (additionalProperties: a schema): its values compare.
  if (isObject(o.additionalProperties) && isObject(t.additionalProperties)) {
    differences.push(
      ...schemaDifferences(
        { ...ours, schema: o.additionalProperties },
        { ...theirs, schema: t.additionalProperties },
        direction,
        `${at}{}`,
      ),
    );
  }
  return differences;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** The key headers an operation accepts, from its security requirements. */
function keyHeaders(document: Json, operation: Json): string[] {
  const schemes = ((document.components as Json).securitySchemes ?? {}) as Json;
  const requirements = (operation.security ?? document.security ?? []) as Json[];
  return requirements
    .flatMap((r) => Object.keys(r))
    .map((name) => String((schemes[name] as Json | undefined)?.name ?? name))
    .sort();
}

function parametersOf(document: Json, pathItem: Json, operation: Json): Map<string, Json> {
  const all = [
    ...((pathItem.parameters ?? []) as Json[]),
    ...((operation.parameters ?? []) as Json[]),
  ];
  return new Map(
    all.map((p) => deref(document, p)).map((p) => [`${String(p.in)} ${String(p.name)}`, p]),
  );
}

function bodySchema(document: Json, holder: unknown): unknown {
  const content = deref(document, holder).content as Json | undefined;
  return (content?.['application/json'] as Json | undefined)?.schema;
}

/** Every difference between the operations of `reference` and the same ones in `ours`. */
export function documentDifferences(ours: Json, reference: Json): string[] {
  const differences: string[] = [];
  const ourPaths = ours.paths as Record<string, Json>;
  for (const [path, theirItem] of Object.entries(reference.paths as Record<string, Json>)) {
    for (const method of METHODS) {
      const theirs = theirItem[method] as Json | undefined;
      if (!theirs) continue;
      const id = String(theirs.operationId);
      const ourItem = ourPaths[path];
      const op = ourItem?.[method] as Json | undefined;
      if (!ourItem || !op) {
        differences.push(`${id}: not implemented (${method.toUpperCase()} ${path})`);
        continue;
      }
      if (op.operationId !== id) differences.push(`${id}: operationId ${String(op.operationId)}`);

      const ourStatuses = Object.keys(op.responses as Json);
      const theirStatuses = Object.keys(theirs.responses as Json);
      const success = (s: string[]) => s.filter((x) => x.startsWith('2'));
      if (success(ourStatuses).join() !== success(theirStatuses).join()) {
        differences.push(
          `${id} success: ${success(ourStatuses).join()}, the reference's ${success(theirStatuses).join()}`,
        );
      }
      const onlyOurs = ourStatuses.filter((s) => !theirStatuses.includes(s));
      const onlyTheirs = theirStatuses.filter((s) => !ourStatuses.includes(s));
      if (onlyOurs.length > 0) differences.push(`${id} errors: also ${onlyOurs.join(', ')}`);
      if (onlyTheirs.length > 0) differences.push(`${id} errors: never ${onlyTheirs.join(', ')}`);

      const ourKeys = keyHeaders(ours, op);
      for (const header of keyHeaders(reference, theirs)) {
        if (!ourKeys.includes(header)) differences.push(`${id} auth: ${header} not accepted`);
      }

      const ourParams = parametersOf(ours, ourItem, op);
      const theirParams = parametersOf(reference, theirItem, theirs);
      for (const [key, theirParam] of theirParams) {
        const ourParam = ourParams.get(key);
        if (!ourParam) {
          differences.push(`${id} parameter ${key}: ignored`);
          continue;
        }
        if (ourParam.required === true && theirParam.required !== true) {
          differences.push(`${id} parameter ${key}: optional in the reference, required here`);
        }
        differences.push(
          ...schemaDifferences(
            { document: ours, schema: ourParam.schema },
            { document: reference, schema: theirParam.schema },
            'request',
            `${id} parameter ${key}`,
          ),
        );
      }
      for (const key of ourParams.keys()) {
        if (!theirParams.has(key)) differences.push(`${id} parameter ${key}: not in the reference`);
      }

      if (theirs.requestBody || op.requestBody) {
        differences.push(
          ...schemaDifferences(
            { document: ours, schema: bodySchema(ours, op.requestBody) },
            { document: reference, schema: bodySchema(reference, theirs.requestBody) },
            'request',
            `${id} request`,
          ),
        );
      }
      for (const status of success(theirStatuses).filter((s) => ourStatuses.includes(s))) {
        differences.push(
          ...schemaDifferences(
            { document: ours, schema: bodySchema(ours, (op.responses as Json)[status]) },
            {
              document: reference,
              schema: bodySchema(reference, (theirs.responses as Json)[status]),
            },
            'response',
            `${id} ${status}`,
          ),
        );
      }
    }
  }
  return differences;
}

/** The error body of both documents, as each operation's refusals carry it. */
export function errorBodyDifferences(ours: Json, reference: Json): string[] {
  return schemaDifferences(
    { document: ours, schema: { $ref: '#/components/schemas/ErrorResponse' } },
    { document: reference, schema: { $ref: '#/components/schemas/ErrorResponse' } },
    'response',
    'ErrorResponse',
  );
}
