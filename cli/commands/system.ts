import type { AdminApi, RuntimeApi } from '../../client/index.js';
import { unwrap } from '../../client/index.js';
import { CLI_NAME, ENV, mask, type Setting } from '../config.js';
import { EXIT } from '../exit-codes.js';
import { record, table } from '../output.js';
import { defineCommand } from '../spec.js';

const SERVERS = ['admin', 'runtime'] as const;

export const health = defineCommand({
  name: 'health',
  summary: 'Whether both servers answer, and how their store is',
  details: 'No key needed. Exit 0 when both are UP, 6 when either is not.',
  examples: [`${CLI_NAME} health`, `${CLI_NAME} health --json`],
  operations: ['admin:adminHealth', 'runtime:runtimeHealth'],
  async run(ctx) {
    const answers = await Promise.all(
      SERVERS.map(async (server) => {
        const api = ctx.anonymous(server) as AdminApi & RuntimeApi;
        try {
          return { server, ...(await unwrap(api.GET('/actuator/health'))) };
        } catch (error) {
          return {
            server,
            status: 'DOWN',
            error: error instanceof Error ? error.message : String(error),
          };
        }
      }),
    );
    return {
      json: Object.fromEntries(answers.map(({ server, ...body }) => [server, body])),
      human: table(answers, [
        ['SERVER', (a) => a.server],
        ['URL', (a) => (a.server === 'admin' ? ctx.config.adminUrl : ctx.config.runtimeUrl)],
        ['STATUS', (a) => a.status],
        ['DETAIL', (a) => ('error' in a ? a.error : '')],
      ]),
      exitCode: answers.every((a) => a.status === 'UP') ? EXIT.OK : EXIT.UNAVAILABLE,
    };
  },
});

export const openapi = defineCommand<{ runtime?: boolean }>({
  name: 'openapi',
  summary: 'The OpenAPI 3.1 document a server serves (the admin server’s, or --runtime)',
  examples: [
    `${CLI_NAME} openapi > admin.json`,
    `${CLI_NAME} openapi --runtime --field info.version`,
  ],
  options: [{ flags: '--runtime', description: 'the runtime server’s document' }],
  operations: ['admin:adminOpenApi', 'runtime:runtimeOpenApi'],
  async run(ctx, _args, o) {
    const api = ctx.anonymous(o.runtime ? 'runtime' : 'admin') as AdminApi & RuntimeApi;
    const document = await unwrap(api.GET('/openapi.json'));
    return { json: document, human: [JSON.stringify(document, null, 2)] };
  },
});

const SETTINGS: readonly [Setting, string, string][] = [
  ['adminUrl', 'admin URL', ENV.adminUrl],
  ['runtimeUrl', 'runtime URL', ENV.runtimeUrl],
  ['adminKey', 'admin key', ENV.adminKey],
  ['tenantKey', 'tenant key', ENV.tenantKey],
];

export const showConfig = defineCommand({
  name: 'config show',
  summary: 'What the CLI will use and where each setting comes from (keys masked)',
  details: `The profile file is JSON: {"default_profile": "local", "profiles": {"local": {"admin_url": "…", "runtime_url": "…", "admin_api_key": "…", "tenant_api_key": "…"}}}. Keep it private (chmod 600).`,
  examples: [`${CLI_NAME} config show`, `${CLI_NAME} config show --profile prod`],
  operations: [],
  async run(ctx) {
    const c = ctx.config;
    const value = (s: Setting) => {
      const v = c[s];
      return v === undefined ? undefined : s.endsWith('Key') ? mask(v) : v;
    };
    const json = {
      config_file: c.configFile,
      ...(c.profile && { profile: c.profile }),
      settings: Object.fromEntries(
        SETTINGS.map(([s]) => [s, { value: value(s) ?? null, source: c.sources[s] ?? 'unset' }]),
      ),
    };
    return {
      json,
      human: [
        ...record([
          ['config file', c.configFile],
          ['profile', c.profile ?? '(none)'],
        ]),
        '',
        ...table(SETTINGS, [
          ['SETTING', ([, label]) => label],
          ['VALUE', ([s]) => value(s) ?? '(not set)'],
          ['FROM', ([s]) => c.sources[s] ?? ''],
          ['ENVIRONMENT', ([, , env]) => env],
        ]),
      ],
    };
  },
});
