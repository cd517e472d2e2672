import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { log } from '../log.js';
import { config } from './settings.js';

let cached: { readonly value: string; readonly at: number } | undefined;
let inFlight: Promise<string> | undefined;
let client: SecretsManagerClient | undefined;

/**
 * The admin master key. Locally it is ADMIN_API_KEY; in AWS, ADMIN_API_KEY_SECRET_ID names a
 * Secrets Manager secret, read on first use (never at module load: no network I/O at cold
 * start) and reused by the container for ADMIN_API_KEY_CACHE_TTL_MS, so a rotation takes
 * effect within that delay without a redeploy.
 */
export async function adminApiKey(): Promise<string> {
  const secretId = config.ADMIN_API_KEY_SECRET_ID;
  if (!secretId) return config.ADMIN_API_KEY;
  const now = Date.now();
  if (cached && now - cached.at < config.ADMIN_API_KEY_CACHE_TTL_MS) return cached.value;
  // Concurrent callers of one container share a single GetSecretValue.
  inFlight ??= readSecret(secretId)
    .then((value) => {
      cached = { value, at: Date.now() };
      return value;
    })
    .catch((error: unknown) => {
      // A Secrets Manager outage must not lock admins out: serve the last good value and try
      // again on the next admin request.
      if (!cached) throw error;
      log.warn('admin key refresh failed; reusing the cached value', { error });
      return cached.value;
    })
    .finally(() => {
      inFlight = undefined;
    });
  return inFlight;
}

async function readSecret(secretId: string): Promise<string> {
  client ??= new SecretsManagerClient({ region: config.AWS_REGION, maxAttempts: 3 });
  const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: secretId }), {
    abortSignal: AbortSignal.timeout(3_000),
  });
  return secretValue(SecretString ?? '');
}

/**
 * The key is the plain secret string; a console-made key/value secret
 * (`{"ADMIN_API_KEY":"…"}`) works too. Anything else yields '' and admin routes answer 401.
 */
function secretValue(secretString: string): string {
  const text = secretString.trim();
  if (!text.startsWith('{')) return text;
  try {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    return typeof parsed.ADMIN_API_KEY === 'string' ? parsed.ADMIN_API_KEY : '';
  } catch {
    return text;
  }
}
