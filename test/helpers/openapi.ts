import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { Server } from '../../functions/routes.js';
import { openApiFile } from '../../infra/openapi.js';

/**
 * Holds answers to the served OpenAPI documents (functions/http/openapi/*.json, which
 * test/unit/openapi.test.ts keeps equal to what the zod schemas generate): the status must be
 * one the operation lists, and the body must validate against its schema, with JSON Schema
 * 2020-12 (Ajv). http.ts applies it to every answer of a test stack's servers, so the whole
 * integration suite proves that views.ts renders what the documents say.
 */

type Json = Record<string, unknown>;
interface Operation {
  readonly server: Server;
  readonly method: string;
  readonly path: string;
  readonly responses: Json;
}

const addFormats = addFormatsModule.default;
const documents = new Map<Server, Json>();
const validators = new Map<string, ValidateFunction>();
const ajv = new Ajv2020({ strict: true, allErrors: true });
addFormats(ajv);

export function documentOf(server: Server): Json {
  let document = documents.get(server);
  if (!document) {
    document = JSON.parse(readFileSync(openApiFile(server), 'utf8')) as Json;
    // The components, as one schema every operation's schema refers into: their refs point
    // into its $defs.
    const schemas = JSON.stringify((document.components as Json).schemas);
    ajv.addSchema({
      $id: `urn:openapi:${server}`,
      $defs: JSON.parse(schemas.replaceAll('"#/components/schemas/', '"#/$defs/')) as Json,
    });
    documents.set(server, document);
  }
  return document;
}

/** The operation a request reaches, as API Gateway routes it: literal paths before templates. */
export function operationOf(
  server: Server,
  method: string,
  rawPath: string,
): Operation | undefined {
  const paths = documentOf(server).paths as Record<string, Record<string, Json>>;
  const templates = Object.keys(paths).sort(
    (a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0),
  );
  // A template variable is one segment; a client that sends a nested scope unencoded in the
  // fund path reaches it through API Gateway's greedy variable all the same.
  for (const segment of ['[^/]+', '.+']) {
    for (const path of templates) {
      const pattern = new RegExp(`^${path.replace(/\{[^}]+\}/g, segment)}$`);
      const operation = paths[path]?.[method.toLowerCase()];
      if (operation && pattern.test(rawPath)) {
        return { server, method, path, responses: operation.responses as Json };
      }
    }
  }
  return undefined;
}

function validatorOf(server: Server, schemaRef: string): ValidateFunction {
  const key = `${server} ${schemaRef}`;
  let validate = validators.get(key);
  if (!validate) {
    const name = schemaRef.replace('#/components/schemas/', '');
    validate = ajv.compile({ $ref: `urn:openapi:${server}#/$defs/${name}` });
    validators.set(key, validate);
  }
  return validate;
}

/** What the document says a status of the operation answers, through `components.responses`. */
function responseOf(server: Server, operation: Operation | undefined, status: number) {
  const document = documentOf(server);
  let response = operation
    ? (operation.responses[String(status)] as Json | undefined)
    : // OpenAPI has no path for "anything else": the document's x-unmatched-requests.
      (((document['x-unmatched-requests'] as Json).responses as Json)[String(status)] as
        | Json
        | undefined);
  if (typeof response?.$ref === 'string') {
    const name = response.$ref.replace('#/components/responses/', '');
    response = ((document.components as Json).responses as Json)[name] as Json;
  }
  if (!response) return undefined;
  // A 204 has no content: its (empty) body has nothing to hold to.
  if (!response.content) return { schemaRef: undefined };
  const content = (response.content as Json)['application/json'] as Json;
  return { schemaRef: (content.schema as Json).$ref as string };
}

/** Answers that held to their operation's documented success status, for coverage. */
export const checkedSuccesses = new Set<string>();

/** Why the answer does not hold to the document, or undefined when it does. */
export function documentProblem(
  server: Server,
  method: string,
  rawPath: string,
  status: number,
  body: unknown,
): string | undefined {
  const operation = operationOf(server, method, rawPath);
  const what = operation
    ? `${method} ${operation.path} (${server})`
    : `${method} ${rawPath} (${server}, no operation)`;
  const response = responseOf(server, operation, status);
  if (!response) return `${what} answered ${status}, which the OpenAPI document does not list`;
  if (response.schemaRef === undefined) {
    if (status === 204 && body !== undefined && Object.keys(body as Json).length > 0) {
      return `${what} answered 204 with a body`;
    }
    if (operation && status < 300) checkedSuccesses.add(`${server} ${method} ${operation.path}`);
    return undefined;
  }
  const validate = validatorOf(server, response.schemaRef);
  if (!validate(body)) {
    const why = (validate.errors ?? []).map(
      (e) => `${e.instancePath || '(body)'} ${e.message} ${JSON.stringify(e.params)}`,
    );
    return `${what} answered ${status} with a body its OpenAPI schema ${response.schemaRef} refuses:\n${why.join('\n')}\n${JSON.stringify(body)}`;
  }
  if (operation && status < 300) checkedSuccesses.add(`${server} ${method} ${operation.path}`);
  return undefined;
}
