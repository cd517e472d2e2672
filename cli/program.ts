import { Command, Option } from 'commander';
import { CLI_NAME, ENV } from './config.js';
import type { GlobalOptions } from './context.js';
import { EXIT } from './exit-codes.js';
import { type AnyCommand, integer } from './spec.js';

/** What each group of commands is for, in `budget-reservations --help`. */
const GROUPS: Readonly<Record<string, string>> = {
  tenants: 'Tenants: create, list, show, rename, suspend, resume, close, bulk actions',
  keys: 'API keys (tenants’, and operators’ under __system__): create (the secret shown once), list, show, update, revoke, validate',
  budgets:
    'Budgets: create, fund, freeze, change limits, caps, shards and thresholds, periods, watch, bulk actions, estimate accuracy',
  policies:
    'Policies: caps and TTL limits by scope pattern, enforced on reserve, dry run and decide',
  reservations: 'Reservations: list, show, force-release, charges, refund',
  events: 'The event log: list (filters), show one; refund a usage event',
  webhooks:
    'Webhook subscriptions: create (the secret shown once), list, show, update, pause, resume, delete, test, deliveries, replay, bulk, security',
  config: 'The CLI’s own configuration: where it looks, what it uses',
};

export type Runner = (
  command: AnyCommand,
  args: string[],
  globals: GlobalOptions,
  options: object,
) => Promise<void>;

export interface ProgramIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
}

/** The command-line tool, built from the declared commands (cli/commands/index.ts). */
export function buildProgram(
  commands: readonly AnyCommand[],
  runner: Runner,
  version: string,
  io: ProgramIo,
): Command {
  const program = new Command(CLI_NAME)
    // Inherited by every command made after it: errors are thrown (main.ts maps them to exit
    // codes), and output goes where the caller says.
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .description(
      'Operate the budget reservation service from a terminal: tenants, API keys, budgets, reservations, balances and the audit trail, through its admin and runtime APIs.',
    )
    .version(version)
    .option('--json', 'print the API’s JSON body (stable, for scripts) instead of a table')
    .option(
      '--field <path>',
      'print one field of the JSON body, e.g. key_secret or balance.remaining.amount',
    )
    .option('--profile <name>', `use this profile of the config file (env ${ENV.profile})`)
    .option(
      '--config <file>',
      `the profile file (env ${ENV.configFile}; default ~/.config/${CLI_NAME}/config.json)`,
    )
    .option(
      '--admin-url <url>',
      `the admin server (env ${ENV.adminUrl}; default http://localhost:7979)`,
    )
    .option(
      '--runtime-url <url>',
      `the runtime server (env ${ENV.runtimeUrl}; default http://localhost:7878)`,
    )
    .addOption(
      new Option(
        '--as <who>',
        'which key to use where an operation takes either (default: the admin key when set)',
      ).choices(['admin', 'tenant']),
    )
    .addOption(new Option('--timeout <seconds>', 'per request').default(30).argParser(integer(1)))
    .option('--verbose', 'one line per request and answer on stderr (never a key)')
    .showHelpAfterError('(add --help for usage)')
    .addHelpText('after', rootHelp());

  const groups = new Map<string, Command>();
  for (const spec of commands) {
    const words = spec.name.split(' ');
    const leaf = words.at(-1) as string;
    let parent = program;
    if (words.length === 2) {
      const group = words[0] as string;
      let command = groups.get(group);
      if (!command) {
        command = program.command(group).description(GROUPS[group] ?? group);
        groups.set(group, command);
      }
      parent = command;
    }
    const command = parent
      .command(leaf)
      .summary(spec.summary)
      .description(spec.summary + (spec.details ? `\n\n${spec.details}` : ''));
    for (const alias of spec.aliases ?? []) command.alias(alias);
    for (const arg of spec.arguments ?? []) {
      command.argument(arg.optional ? `[${arg.name}]` : `<${arg.name}>`, arg.description);
    }
    for (const o of spec.options ?? []) {
      const option = new Option(o.flags, o.description);
      if (o.choices) option.choices(o.choices);
      if (o.default !== undefined) option.default(o.default);
      if (o.parse) option.argParser(o.parse);
      if (o.required) option.makeOptionMandatory();
      command.addOption(option);
    }
    command.addHelpText(
      'after',
      `\nExamples:\n${spec.examples.map((e) => `  $ ${e}`).join('\n')}\n`,
    );
    command.action(async (...received: unknown[]) => {
      const self = received.at(-1) as Command;
      const args = received.slice(0, (spec.arguments ?? []).length) as string[];
      await runner(spec, args, self.optsWithGlobals<GlobalOptions>(), self.opts());
    });
  }
  for (const [name, group] of groups) {
    const examples = commands
      .filter((c) => c.name.startsWith(`${name} `))
      .map((c) => c.examples[0]);
    group.addHelpText('after', `\nExamples:\n${examples.map((e) => `  $ ${e}`).join('\n')}\n`);
  }
  return program;
}

function rootHelp(): string {
  return `
Configuration: flags, then the environment (${ENV.adminUrl}, ${ENV.adminKey}, ${ENV.runtimeUrl},
${ENV.tenantKey} for a tenant's key), then a profile of ~/.config/${CLI_NAME}/config.json. Keys are never
taken from flags, and never printed: only a new key's secret, once. \`${CLI_NAME} config show\` tells what is used.

Exit codes: ${EXIT.OK} ok, ${EXIT.USAGE} usage or invalid request, ${EXIT.NOT_FOUND} not found, ${EXIT.REFUSED} refused (conflict, limit, frozen),
${EXIT.AUTH} no key or key refused, ${EXIT.UNAVAILABLE} unavailable or busy (retry later), ${EXIT.OTHER} anything else, 130 interrupted.

Examples:
  $ export ADMIN_API_KEY=change-me              # the key \`npm start\` was given
  $ ${CLI_NAME} tenants create acme --name "Acme Corp"
  $ ${CLI_NAME} budgets create tenant:acme --allocated 100000000
  $ ${CLI_NAME} budgets list --tenant acme --json
  $ ${CLI_NAME} budgets watch tenant:acme
`;
}
