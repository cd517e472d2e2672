import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import * as z from 'zod';
import { CliError } from './exit-codes.js';

/**
 * Where the CLI finds the servers and its keys. URLs: flag, then environment, then profile, then
 * the local defaults of `npm start`. Keys: environment, then profile; never a flag, because a
 * command line is visible to every user of the machine (`ps`) and lands in shell history.
 * A profile named by `--profile` beats the environment (so a stray ADMIN_API_KEY of a local
 * stack is never sent to the servers of the profile asked for); the default profile does not.
 */
export const CLI_NAME = 'budget-reservations';

export const ENV = {
  adminUrl: 'ADMIN_URL',
  runtimeUrl: 'RUNTIME_URL',
  adminKey: 'ADMIN_API_KEY',
  /** The tenant key, under the name the Cycles SDKs read it from. */
  tenantKey: 'CYCLES_API_KEY',
  profile: 'BUDGET_RESERVATIONS_PROFILE',
  configFile: 'BUDGET_RESERVATIONS_CONFIG',
} as const;

const DEFAULTS = { adminUrl: 'http://localhost:7979', runtimeUrl: 'http://localhost:7878' };

const Url = z.url({ protocol: /^https?$/ });
const Profile = z.strictObject({
  admin_url: Url.optional(),
  runtime_url: Url.optional(),
  admin_api_key: z.string().min(1).optional(),
  tenant_api_key: z.string().min(1).optional(),
});
const ConfigFile = z.strictObject({
  /** The profile used when none is named. */
  default_profile: z.string().min(1).optional(),
  profiles: z.record(z.string().min(1), Profile),
});
export type ConfigFile = z.infer<typeof ConfigFile>;

export type Setting = 'adminUrl' | 'runtimeUrl' | 'adminKey' | 'tenantKey';
export type Source = 'flag' | 'environment' | `profile ${string}` | 'default';

export interface Config {
  readonly adminUrl: string;
  readonly runtimeUrl: string;
  readonly adminKey?: string | undefined;
  readonly tenantKey?: string | undefined;
  readonly profile?: string | undefined;
  readonly configFile: string;
  /** Where each setting came from (`config show`); absent: not set. */
  readonly sources: Partial<Record<Setting, Source>>;
  /** Said once on stderr: a profile file others may read, for example. */
  readonly warnings: readonly string[];
}

export interface ConfigInput {
  readonly flags: {
    readonly adminUrl?: string | undefined;
    readonly runtimeUrl?: string | undefined;
    readonly profile?: string | undefined;
    readonly config?: string | undefined;
  };
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly home: string;
}

export const configFileOf = ({ flags, env, home }: ConfigInput): string =>
  flags.config ??
  env[ENV.configFile] ??
  join(env.XDG_CONFIG_HOME || join(home, '.config'), CLI_NAME, 'config.json');

export async function resolveConfig(input: ConfigInput): Promise<Config> {
  const { flags, env } = input;
  const configFile = configFileOf(input);
  const file = await readConfigFile(configFile);
  const named = flags.profile ?? env[ENV.profile];
  const profileName = named ?? file?.config.default_profile;
  const profile = profileName === undefined ? undefined : file?.config.profiles[profileName];
  if (profileName !== undefined && !profile) {
    throw new CliError(
      `no profile "${profileName}" in ${configFile}${file ? ` (it has: ${Object.keys(file.config.profiles).join(', ') || 'none'})` : ' (no such file)'}`,
    );
  }
  const fromProfile: Partial<Record<Setting, string>> = {
    adminUrl: profile?.admin_url,
    runtimeUrl: profile?.runtime_url,
    adminKey: profile?.admin_api_key,
    tenantKey: profile?.tenant_api_key,
  };
  const fromEnv: Partial<Record<Setting, string>> = {
    adminUrl: env[ENV.adminUrl] || undefined,
    runtimeUrl: env[ENV.runtimeUrl] || undefined,
    adminKey: env[ENV.adminKey] || undefined,
    tenantKey: env[ENV.tenantKey] || undefined,
  };
  const fromFlags: Partial<Record<Setting, string>> = {
    adminUrl: flags.adminUrl,
    runtimeUrl: flags.runtimeUrl,
  };
  const profileWins = flags.profile !== undefined;
  const sources: Partial<Record<Setting, Source>> = {};
  const pick = (setting: Setting): string | undefined => {
    const profileLayer: [Source, string | undefined] = [
      `profile ${profileName}`,
      fromProfile[setting],
    ];
    const envLayer: [Source, string | undefined] = ['environment', fromEnv[setting]];
    const layers: [Source, string | undefined][] = [
      ['flag', fromFlags[setting]],
      ...(profileWins ? [profileLayer, envLayer] : [envLayer, profileLayer]),
      ['default', DEFAULTS[setting as keyof typeof DEFAULTS]],
    ];
    const found = layers.find(([, value]) => value !== undefined);
    if (found) sources[setting] = found[0];
    return found?.[1];
  };
  const adminUrl = checkedUrl(pick('adminUrl') ?? DEFAULTS.adminUrl, 'the admin URL');
  const runtimeUrl = checkedUrl(pick('runtimeUrl') ?? DEFAULTS.runtimeUrl, 'the runtime URL');
  const warnings =
    file?.othersMayRead && (profile?.admin_api_key || profile?.tenant_api_key)
      ? [`${configFile} holds keys and others may read it: chmod 600 it`]
      : [];
  return {
    adminUrl,
    runtimeUrl,
    adminKey: pick('adminKey'),
    tenantKey: pick('tenantKey'),
    profile: profileName,
    configFile,
    sources,
    warnings,
  };
}

function checkedUrl(value: string, what: string): string {
  if (!Url.safeParse(value).success) throw new CliError(`${what} is not an http(s) URL: ${value}`);
  return value.replace(/\/+$/, '');
}

async function readConfigFile(
  path: string,
): Promise<{ config: ConfigFile; othersMayRead: boolean } | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CliError(`cannot read ${path}: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new CliError(`${path} is not JSON: ${(error as Error).message}`);
  }
  const config = ConfigFile.safeParse(parsed);
  if (!config.success) {
    throw new CliError(`${path} is not a profile file: ${z.prettifyError(config.error)}`);
  }
  const mode = (await stat(path)).mode;
  return {
    config: config.data,
    othersMayRead: process.platform !== 'win32' && (mode & 0o077) !== 0,
  };
}

/** A secret as the CLI ever shows it: never more than a prefix of a long key. */
export function mask(secret: string): string {
  return secret.length >= 20 ? `${secret.slice(0, 6)}…(${secret.length} characters)` : '********';
}
