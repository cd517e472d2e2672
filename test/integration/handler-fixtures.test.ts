import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RouteId, routeEntries, routes, sweeper } from '../../functions/routes.js';
import { buildConsole } from '../../infra/build-console.js';
import { eventsDir, SAMPLE } from '../../infra/generate-events.js';
import type { Handler } from '../../infra/local/server.js';
import { testClock } from '../helpers/clock.js';
import { consoleTestDir } from '../helpers/console.js';
import { useTestStack } from '../helpers/scaffold.js';

/**
 * Every events/*.json fixture (the ones `sam local invoke -e` takes) handed to its handler
 * in-process, against DynamoDB Local, in the order of the README bootstrap. The fixtures share
 * tenant `acme` and the admin key `change-me`; only the tenant key secret is substituted once
 * createApiKey has issued it.
 */

// Each route's fixture and the status it must produce; the order builds the state the next needs.
const SCENARIO: readonly (readonly [RouteId, number])[] = [
  ['runtimeHealth', 200],
  ['adminHealth', 200],
  ['runtimeOpenApi', 200],
  ['adminOpenApi', 200],
  ['runtimeNotFound', 404],
  ['adminNotFound', 404],
  ['createTenant', 201],
  ['createApiKey', 201],
  ['validateKey', 200],
  ['runtimeIntrospectAuth', 200],
  ['adminIntrospectAuth', 200],
  ['createBudget', 201],
  ['fundBudget', 200],
  ['decide', 200],
  ['createReservation', 200],
  ['getReservation', 200],
  ['extendReservation', 200],
  ['chargeReservation', 200],
  ['listCharges', 200],
  ['delegateReservation', 200],
  ['listDelegations', 200],
  ['commitReservation', 200],
  ['refundReservation', 200],
  ['releaseReservation', 200],
  ['listReservations', 200],
  ['listBalances', 200],
  ['createEvent', 201],
  ['refundEvent', 200],
  ['listBudgets', 200],
  ['lookupBudget', 200],
  ['listBudgetPeriods', 200],
  ['getEstimateAccuracy', 200],
  ['updateBudget', 200],
  ['fundBudgetByQuery', 200],
  ['freezeBudget', 200],
  ['unfreezeBudget', 200],
  ['listTenants', 200],
  ['getTenant', 200],
  ['listApiKeys', 200],
  // The fixtures name a key id that does not exist (the created key's id is random).
  ['getApiKey', 404],
  ['updateApiKey', 404],
  ['revokeApiKey', 404],
  ['listAuditLogs', 200],
  // Events and webhooks. The fixtures name an event and a subscription that do not exist (their
  // ids are the service's to make up).
  ['listEvents', 200],
  ['getEvent', 404],
  ['listTenantEvents', 200],
  ['createWebhookSubscription', 201],
  ['createTenantWebhook', 201],
  ['listWebhookSubscriptions', 200],
  ['listTenantWebhooks', 200],
  ['getWebhookSubscription', 404],
  ['getTenantWebhook', 404],
  ['updateWebhookSubscription', 404],
  ['updateTenantWebhook', 404],
  ['testWebhookSubscription', 404],
  ['testTenantWebhook', 404],
  ['listWebhookDeliveries', 404],
  ['listTenantWebhookDeliveries', 404],
  ['replayEvents', 404],
  ['replayTenantWebhook', 404],
  ['deleteWebhookSubscription', 404],
  ['deleteTenantWebhook', 404],
  ['bulkActionWebhooks', 200],
  ['getWebhookSecurityConfig', 200],
  // After the creates: it refuses http (the local receiver's scheme).
  ['updateWebhookSecurityConfig', 200],
  ['createPolicy', 201],
  ['listPolicies', 200],
  // The fixtures name a policy id that does not exist (the created policy's id is random).
  ['getPolicy', 404],
  ['updatePolicy', 404],
  ['getOverview', 200],
  ['bulkActionBudgets', 200],
  ['bulkActionTenants', 200],
  // The console's page (built into this file's own folder below).
  ['console', 200],
  // Last: it suspends the tenant.
  ['updateTenant', 200],
];

let keySecret: string = SAMPLE.apiKeySecret;

// Creates this file's table and sets TABLE_NAME / DYNAMODB_ENDPOINT before any handler loads.
// Server time runs with real time; the sweeper test moves it past a deadline instead of waiting
// (the tests of this file run one at a time).
const clock = testClock();
const consoleDir = consoleTestDir();
useTestStack({ env: { ADMIN_API_KEY: SAMPLE.adminApiKey, CONSOLE_DIR: consoleDir }, clock });
beforeAll(() => buildConsole(consoleDir));
afterAll(() => rm(consoleDir, { recursive: true, force: true }));

const handlers = new Map<string, Promise<Handler>>();
function handlerOf(entry: string): Promise<Handler> {
  let loaded = handlers.get(entry);
  if (!loaded) {
    const file = new URL(`../../functions/${entry}.ts`, import.meta.url).href;
    loaded = import(/* @vite-ignore */ file).then((m: { handler: Handler }) => m.handler);
    handlers.set(entry, loaded);
  }
  return loaded;
}

async function fixture(name: string): Promise<APIGatewayProxyEventV2> {
  const text = await readFile(join(eventsDir, `${name}.json`), 'utf8');
  return JSON.parse(text.replaceAll(SAMPLE.apiKeySecret, keySecret)) as APIGatewayProxyEventV2;
}

function context(name: string): Context {
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: name,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:123456789012:function:${name}`,
    memoryLimitInMB: '512',
    awsRequestId: `fixture-${name}`,
    logGroupName: `/aws/lambda/${name}`,
    logStreamName: 'fixture',
    getRemainingTimeInMillis: () => 10_000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

async function invoke(id: RouteId, event: APIGatewayProxyEventV2) {
  const handler = await handlerOf(routes[id].entry);
  const result = await handler(event, context(id));
  const json = String(result.headers?.['content-type']).startsWith('application/json');
  return {
    status: result.statusCode,
    // The console answers HTML; every other route JSON.
    body: (json ? JSON.parse(result.body ?? '{}') : { text: result.body }) as Record<
      string,
      unknown
    >,
  };
}

describe('events/*.json through their handlers', () => {
  it('covers every route once', () => {
    expect(SCENARIO.map(([id]) => id).sort()).toEqual(
      routeEntries()
        .map(([id]) => id)
        .sort(),
    );
  });

  it.each(SCENARIO)('events/%s.json answers %i', async (id, status) => {
    if (id === 'fundBudget') {
      // The fund fixture credits a three-level scope: its budget (and its parents') first.
      const parts = SAMPLE.nestedScope.split('/');
      for (let depth = 2; depth <= parts.length; depth++) {
        const create = await fixture('createBudget');
        const body = JSON.parse(create.body ?? '{}') as Record<string, unknown>;
        create.body = JSON.stringify({ ...body, scope: parts.slice(0, depth).join('/') });
        expect((await invoke('createBudget', create)).status).toBe(201);
      }
    }
    if (id === 'delegateReservation') {
      // The parent of its own, left ACTIVE with its child (the first one's commit comes next).
      const create = await fixture('createReservation');
      create.body = create.body?.replace(SAMPLE.reserveKey, SAMPLE.delegateKey);
      expect((await invoke('createReservation', create)).status).toBe(200);
    }
    if (id === 'releaseReservation') {
      // Commit has finalized the first reservation: release gets its own, from the same fixture.
      const create = await fixture('createReservation');
      create.body = create.body?.replace(SAMPLE.reserveKey, SAMPLE.releaseKey);
      expect((await invoke('createReservation', create)).status).toBe(200);
    }

    const result = await invoke(id, await fixture(id));

    expect(result.status, JSON.stringify(result.body)).toBe(status);
    if (id === 'createApiKey') keySecret = String(result.body.key_secret);
  });

  it('events/sweeper.json runs one sweep and expires what is due', async () => {
    const create = await fixture('createReservation');
    const body = JSON.parse(create.body ?? '{}') as Record<string, unknown>;
    create.body = JSON.stringify({
      ...body,
      idempotency_key: 'short',
      ttl_ms: 1_000,
      grace_period_ms: 0,
    });
    expect((await invoke('createReservation', create)).status).toBe(200);
    clock.advance(1_100);
    const { handler } = (await import(
      /* @vite-ignore */ new URL(`../../functions/${sweeper.entry}.ts`, import.meta.url).href
    )) as { handler: (event: unknown, context: Context) => Promise<{ expired: number }> };
    const event: unknown = JSON.parse(await readFile(join(eventsDir, 'sweeper.json'), 'utf8'));

    // 10 s left: the handler sweeps once, then stops, since the next pass would end past 5 s.
    const result = await handler(event, context('sweeper'));

    expect(result.expired).toBeGreaterThanOrEqual(1);
  });
});
