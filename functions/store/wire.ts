import { randomUUID } from 'node:crypto';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import * as dynamodb from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  type BatchGetCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import type {
  FinalizeHandler,
  FinalizeHandlerArguments,
  FinalizeRequestMiddleware,
  HttpRequest,
  HttpResponse,
  MiddlewareStack,
  RequestSigner,
} from '@smithy/types';
import { config } from '../config/settings.js';
import { log } from '../log.js';
import { documentClient, dynamoClient } from './client.js';
import type { Item, Key, TransactItem } from './expressions.js';

// The two calls every operation makes (a BatchGetItem before its TransactWriteItems) on a lean
// path: the SDK's middleware stack, resolved per command and again on every call, with its
// schema-driven serializer, endpoint rules, auth-scheme resolution and lib-dynamodb's marshalling
// pass, cost about 0.3 ms of CPU per call here (BENCHMARKS.md § Server CPU profile). This path
// keeps what gives a guarantee and drops the rest: the client's own middlewares (busy → 429/503,
// the per-request count, the SDK's retry strategy with its timeouts and token bucket, and
// whatever a test or the bench adds: the contention emulator, the probe) run as on any command;
// the request is DynamoDB's JSON protocol written once (ClientRequestToken included, so a retried
// transaction is applied once), signed per attempt by the SDK's SigV4 signer with the client's
// credentials, sent by the client's own HTTP handler (its sockets, connect and attempt timeouts);
// errors are the SDK's exception classes. The items are marshalled once, here.

/** Middlewares of the SDK's own request building, replaced or not needed on this path. */
const REPLACED = [
  'serializerMiddleware',
  'deserializerMiddleware',
  'contentLengthMiddleware',
  'getUserAgentMiddleware',
  'hostHeaderMiddleware',
  'recursionDetectionMiddleware',
  'httpSigningMiddleware',
  // Placed relative to the endpoint middleware each command adds: this path resolves none.
  'httpAuthSchemeMiddleware',
];

type Output = Record<string, unknown>;
type Handler = (args: { input: object }) => Promise<{ output: Output }>;

/**
 * The client's middleware stack changes at run time (the contention emulator is installed and
 * removed by tests): the lean handlers are rebuilt when it has.
 */
let stackVersion = 0;
const stack = dynamoClient.middlewareStack as unknown as Record<string, unknown>;
for (const method of ['add', 'addRelativeTo', 'remove', 'removeByTag', 'use']) {
  const original = stack[method] as (...args: unknown[]) => unknown;
  stack[method] = (...args: unknown[]) => {
    stackVersion++;
    return original.apply(stack, args);
  };
}

const handlers = new Map<string, { version: number; handler: Handler }>();

/**
 * The lean handler of one operation, built from the client's stack as it is now; the SDK's own
 * command when that stack cannot be resolved without the middlewares taken out (Lambda runs the
 * runtime's SDK, not the one tested here: a version whose middlewares are placed otherwise).
 */
function handlerOf(operation: Operation): Handler {
  const cached = handlers.get(operation);
  if (cached?.version === stackVersion) return cached.handler;
  let handler: Handler;
  try {
    handler = leanHandler(operation);
  } catch (error) {
    log.warn('lean DynamoDB path unavailable: the SDK sends this operation', {
      operation,
      error: error instanceof Error ? error.message : String(error),
    });
    handler = sdkHandler(operation);
  }
  handlers.set(operation, { version: stackVersion, handler });
  return handler;
}

type Operation = 'TransactWriteItems' | 'BatchGetItem';

/**
 * The operation sent by the document client, as before this path: the fallback. Its input and
 * output are the items as JavaScript values, as on the lean path above its marshalling step.
 */
export const sdkHandler =
  (operation: Operation): Handler =>
  async ({ input }) => {
    const output =
      operation === 'TransactWriteItems'
        ? await documentClient.send(new TransactWriteCommand(input as TransactWriteCommandInput))
        : await documentClient.send(new BatchGetCommand(input as BatchGetCommandInput));
    return { output: output as unknown as Output };
  };

/**
 * The client's stack without the SDK's request building. As on the document client, the
 * middlewares of the initialize step (the count, busy answers, the bench's tally) see the items
 * as JavaScript values and those below (retry, the contention emulator) the marshalled input.
 */
function leanHandler(operation: Operation): Handler {
  const lean = dynamoClient.middlewareStack.clone() as unknown as MiddlewareStack<object, Output>;
  for (const name of REPLACED) lean.remove(name);
  lean.add(
    (next) => async (args) => {
      const marshalledInput = marshallInput(operation, args.input as Output);
      const result = await next({
        ...args,
        input: marshalledInput,
        request: await requestOf(operation, marshalledInput),
      });
      return { ...result, output: unmarshallOutput(operation, result.output) };
    },
    { step: 'serialize', name: 'leanSerializer' },
  );
  lean.addRelativeTo(
    ((next: FinalizeHandler<object, Output>) => async (args: FinalizeHandlerArguments<object>) =>
      next({
        ...args,
        request: await sign(args.request as HttpRequest),
      })) as FinalizeRequestMiddleware<object, Output>,
    { name: 'leanSigner', relation: 'after', toMiddleware: 'retryMiddleware' },
  );
  lean.add(
    (next) => async (args) => {
      const { response } = await next(args);
      return { response, output: await outputOf(response as HttpResponse) };
    },
    { step: 'deserialize', name: 'leanDeserializer' },
  );
  const send = async (args: {
    request: unknown;
  }): Promise<{ response: unknown; output: Output }> => ({
    response: (await dynamoClient.config.requestHandler.handle(args.request as HttpRequest))
      .response,
    output: {},
  });
  const context = { clientName: 'DynamoDBClient', commandName: `${operation}Command` };
  return lean.resolve(send, context) as unknown as Handler;
}

/** Sends one operation, its items as JavaScript values both ways. */
async function call(operation: Operation, input: object): Promise<Output> {
  return (await handlerOf(operation)({ input })).output;
}

/** Where the client sends its requests: its configured endpoint, else the region's. */
let endpoint: Promise<URL> | undefined;
const endpointOf = (): Promise<URL> => {
  endpoint ??= (async () => {
    if (config.DYNAMODB_ENDPOINT !== undefined) return new URL(config.DYNAMODB_ENDPOINT);
    const c = dynamoClient.config;
    const { url } = c.endpointProvider({
      Region: config.AWS_REGION,
      UseFIPS: await c.useFipsEndpoint(),
      UseDualStack: await c.useDualstackEndpoint(),
      AccountIdEndpointMode: 'disabled',
    });
    return url;
  })();
  return endpoint;
};

async function requestOf(operation: Operation, input: object): Promise<HttpRequest> {
  const url = await endpointOf();
  const body = JSON.stringify(input, binaryAsBase64);
  // A plain HttpRequest: this file imports nothing of the SDK's packages beyond the client, whose
  // runtime version Lambda provides (docs/deploy.md § Bundling).
  return {
    method: 'POST',
    protocol: url.protocol,
    hostname: url.hostname,
    ...(url.port && { port: Number(url.port) }),
    path: url.pathname,
    query: {},
    headers: {
      host: url.host,
      'content-type': 'application/x-amz-json-1.0',
      'content-length': String(Buffer.byteLength(body)),
      'x-amz-target': `DynamoDB_20120810.${operation}`,
    },
    body,
  };
}

/** JSON's replacer: binary attribute values travel as base64, as the protocol has them. */
function binaryAsBase64(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const raw = this[key];
  return raw instanceof Uint8Array
    ? Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('base64')
    : value;
}

/**
 * The client's own SigV4 signer (its credentials, region and service), at the client's clock
 * offset as its other calls have corrected it.
 */
let signer: Promise<RequestSigner> | undefined;
async function sign(request: HttpRequest): Promise<HttpRequest> {
  signer ??= dynamoClient.config.signer();
  const offset = dynamoClient.config.systemClockOffset ?? 0;
  return (await signer).sign(request, { signingDate: new Date(Date.now() + offset) });
}

/** The answer's JSON, or the SDK's exception for an error answer. */
async function outputOf(response: HttpResponse): Promise<Output> {
  const chunks: Buffer[] = [];
  for await (const chunk of response.body as AsyncIterable<Buffer>) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString('utf8');
  const status = response.statusCode;
  const $metadata = {
    httpStatusCode: status,
    requestId: response.headers['x-amzn-requestid'],
  };
  let json: Record<string, unknown> = {};
  try {
    json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    if (status < 300) throw new Error(`DynamoDB answered ${status} with a body that is not JSON`);
  }
  if (status < 300) return { ...json, $metadata };
  throw errorOf(json, status, $metadata);
}

type ExceptionClass = new (opts: Record<string, unknown>) => dynamodb.DynamoDBServiceException;

/** The SDK's exception class of an error answer (`__type`), with the fields it carries. */
function errorOf(json: Record<string, unknown>, status: number, $metadata: object): Error {
  const name =
    String(json.__type ?? '')
      .split('#')
      .pop() || `HTTP${status}`;
  const message = String(json.message ?? json.Message ?? name);
  const Exception = (dynamodb as unknown as Record<string, unknown>)[name];
  if (
    typeof Exception === 'function' &&
    Exception.prototype instanceof dynamodb.DynamoDBServiceException
  ) {
    return new (Exception as ExceptionClass)({ ...json, message, $metadata });
  }
  return new dynamodb.DynamoDBServiceException({
    name,
    $fault: status >= 500 ? 'server' : 'client',
    message,
    $metadata,
  });
}

// ---- the two operations, their items marshalled once -------------------------------------------

const marshalled = (value: unknown) => marshall(value as Item, { removeUndefinedValues: true });

/** The request as the protocol has it: keys, items and values as AttributeValues. */
function marshallInput(operation: Operation, input: Output): Output {
  if (operation === 'BatchGetItem') {
    const requests: Output = {};
    for (const [table, r] of Object.entries(input.RequestItems as Record<string, Output>))
      requests[table] = { ...r, Keys: (r.Keys as Key[]).map(marshalled) };
    return { ...input, RequestItems: requests };
  }
  const items = (input.TransactItems as TransactItem[]).map((item) => {
    const out: Output = {};
    for (const [kind, action] of Object.entries(item)) {
      const a: Output = { ...action };
      for (const field of ['Key', 'Item', 'ExpressionAttributeValues'])
        if (a[field] !== undefined) a[field] = marshalled(a[field]);
      out[kind] = a;
    }
    return out;
  });
  return { ...input, TransactItems: items };
}

/** The answer's items as JavaScript values (BatchGetItem's found and unprocessed keys). */
function unmarshallOutput(operation: Operation, output: Output): Output {
  if (operation !== 'BatchGetItem') return output;
  const native = (byTable: unknown, field?: string) => {
    const out: Output = {};
    for (const [table, v] of Object.entries((byTable ?? {}) as Output))
      out[table] = field
        ? { ...(v as Output), [field]: ((v as Output)[field] as AttributeMap[]).map(itemOf) }
        : (v as AttributeMap[]).map(itemOf);
    return out;
  };
  return {
    ...output,
    Responses: native(output.Responses),
    UnprocessedKeys: native(output.UnprocessedKeys, 'Keys'),
  };
}

/**
 * TransactWriteItems; `token` (ClientRequestToken) makes the same transaction sent again within
 * 10 minutes apply once: one is made here when not given, as the SDK does, and every attempt of
 * this call sends it.
 */
export async function transactWriteItems(
  items: readonly TransactItem[],
  token?: string,
): Promise<void> {
  await call('TransactWriteItems', {
    TransactItems: items,
    ClientRequestToken: token ?? randomUUID(),
  });
}

/** A strongly consistent BatchGetItem of one table: the items found, the keys left unprocessed. */
export async function batchGetItems(
  table: string,
  keys: readonly Key[],
): Promise<{ items: Item[]; unprocessed: Key[] }> {
  const output = await call('BatchGetItem', {
    RequestItems: { [table]: { Keys: keys, ConsistentRead: true } },
  });
  const found = (output.Responses as Record<string, Item[]> | undefined)?.[table] ?? [];
  const left = (output.UnprocessedKeys as Record<string, { Keys?: Key[] }> | undefined)?.[table];
  return { items: found, unprocessed: left?.Keys ?? [] };
}

type AttributeMap = Record<string, AttributeValue>;

/** An item as the protocol sends it (binary as base64, or as bytes), unmarshalled as the SDK would. */
export const itemOf = (wire: AttributeMap): Item => unmarshall(withBinary(wire) as AttributeMap);

function withBinary(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return value;
  if (Array.isArray(value)) return value.map(withBinary);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === 'B' && typeof v === 'string') out[k] = fromBase64(v);
    else if (k === 'BS' && Array.isArray(v)) out[k] = v.map((b) => fromBase64(String(b)));
    else out[k] = withBinary(v);
  }
  return out;
}

const fromBase64 = (text: string) => new Uint8Array(Buffer.from(text, 'base64'));
