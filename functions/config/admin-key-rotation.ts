import { randomBytes } from 'node:crypto';

/**
 * Rotation of the admin key, by Secrets Manager's four-step protocol (createSecret, setSecret,
 * testSecret, finishSecret; docs.aws.amazon.com/secretsmanager/latest/userguide/
 * rotate-secrets_lambda-functions.html). The key is ours alone: no other system holds it, so
 * setSecret and testSecret have nothing to do. finishSecret makes the new value AWSCURRENT, and
 * Secrets Manager moves AWSPREVIOUS to the value it replaces, which the functions keep accepting
 * (functions/config/secrets.ts): nobody is locked out until the rotation after next.
 */
export interface RotationEvent {
  readonly SecretId: string;
  readonly ClientRequestToken: string;
  readonly Step: 'createSecret' | 'setSecret' | 'testSecret' | 'finishSecret';
}

/** The Secrets Manager calls rotation makes (functions/jobs/rotate-admin-key.ts binds the SDK). */
export interface SecretsPort {
  /** Version id → its staging labels; whether rotation is enabled. */
  describe(secretId: string): Promise<{
    readonly rotationEnabled: boolean;
    readonly versions: Readonly<Record<string, readonly string[]>>;
  }>;
  /** The value at a version or stage; undefined when there is none. */
  value(
    secretId: string,
    at: { readonly versionId?: string; readonly stage?: string },
  ): Promise<string | undefined>;
  putPending(secretId: string, token: string, value: string): Promise<void>;
  makeCurrent(secretId: string, token: string, replacing: string): Promise<void>;
}

/** A new key: 48 characters, 288 random bits, safe in an HTTP header. */
export const newAdminKey = (): string => randomBytes(36).toString('base64url');

export async function rotationStep(port: SecretsPort, event: RotationEvent): Promise<void> {
  const { SecretId: id, ClientRequestToken: token, Step: step } = event;
  const { rotationEnabled, versions } = await port.describe(id);
  const stages = versions[token];
  if (!rotationEnabled) throw new Error('rotation is not enabled on the secret');
  if (!stages) throw new Error(`version ${token} is not a version of the secret`);
  if (stages.includes('AWSCURRENT')) return; // already finished: a retried invocation
  if (!stages.includes('AWSPENDING')) throw new Error(`version ${token} is not AWSPENDING`);
  switch (step) {
    case 'createSecret': {
      if ((await port.value(id, { versionId: token, stage: 'AWSPENDING' })) !== undefined) return;
      const current = (await port.value(id, { stage: 'AWSCURRENT' })) ?? '';
      await port.putPending(id, token, sameShape(current, newAdminKey()));
      return;
    }
    case 'setSecret':
    case 'testSecret':
      return;
    case 'finishSecret': {
      const current = Object.entries(versions).find(([, s]) => s.includes('AWSCURRENT'))?.[0];
      if (!current) throw new Error('the secret has no AWSCURRENT version');
      await port.makeCurrent(id, token, current);
      return;
    }
  }
}

/** A key/value secret (`{"ADMIN_API_KEY": …}`, made in the console) stays one; plain text stays plain. */
function sameShape(current: string, key: string): string {
  try {
    const parsed: unknown = JSON.parse(current);
    if (parsed && typeof parsed === 'object' && 'ADMIN_API_KEY' in parsed) {
      return JSON.stringify({ ...parsed, ADMIN_API_KEY: key });
    }
  } catch {
    // plain text
  }
  return key;
}
