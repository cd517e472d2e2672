import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { KMSClient } from '@aws-sdk/client-kms';
import { config } from '../config/settings.js';

/**
 * Webhook signing secrets and custom headers at rest (docs/decisions.md § Events and webhooks):
 * sealed when a subscription is written, opened only where a delivery is made. In AWS by the
 * data stack's KMS key (Encrypt on the write routes, Decrypt on the delivery function alone,
 * each call bound to the subscription by its encryption context); locally by AES-256-GCM under
 * a key the local runner keeps in DATA_DIR (WEBHOOK_SEALING_KEY). The sealed text names its
 * method, so a value is always opened the way it was sealed.
 */
export interface Sealer {
  seal(plain: string, subscriptionId: string): Promise<string>;
  open(sealed: string, subscriptionId: string): Promise<string>;
}

const LOCAL = 'local1';
const KMS = 'kms1';

/** AES-256-GCM: a fresh 96-bit nonce per value, the subscription id as associated data. */
export function localSealer(key: Buffer): Sealer {
  if (key.length !== 32) throw new Error('the webhook sealing key must be 32 bytes');
  return {
    seal: async (plain, id) => {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(Buffer.from(id));
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return `${LOCAL}.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
    },
    open: async (sealed, id) => {
      const [method, text = ''] = sealed.split('.');
      if (method !== LOCAL) throw new Error(`sealed with ${method}, not the local key`);
      const raw = Buffer.from(text, 'base64url');
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
      decipher.setAAD(Buffer.from(id)).setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    },
  };
}

let kms: Promise<KMSClient> | undefined;
const kmsClient = () =>
  (kms ??= import('@aws-sdk/client-kms').then(
    ({ KMSClient }) => new KMSClient({ region: config.AWS_REGION, maxAttempts: 3 }),
  ));

/** The data stack's KMS key; the encryption context binds a value to its subscription. */
export function kmsSealer(keyId: string): Sealer {
  const context = (id: string) => ({ subscription_id: id });
  return {
    seal: async (plain, id) => {
      const { EncryptCommand } = await import('@aws-sdk/client-kms');
      const out = await (await kmsClient()).send(
        new EncryptCommand({
          KeyId: keyId,
          Plaintext: Buffer.from(plain, 'utf8'),
          EncryptionContext: context(id),
        }),
      );
      return `${KMS}.${Buffer.from(out.CiphertextBlob ?? new Uint8Array()).toString('base64url')}`;
    },
    open: async (sealed, id) => {
      const [method, text = ''] = sealed.split('.');
      if (method !== KMS) throw new Error(`sealed with ${method}, not KMS`);
      const { DecryptCommand } = await import('@aws-sdk/client-kms');
      const out = await (await kmsClient()).send(
        new DecryptCommand({
          KeyId: keyId,
          CiphertextBlob: Buffer.from(text, 'base64url'),
          EncryptionContext: context(id),
        }),
      );
      return Buffer.from(out.Plaintext ?? new Uint8Array()).toString('utf8');
    },
  };
}

let sealer: Sealer | undefined;

/** The process's sealer: KMS when WEBHOOK_KMS_KEY_ID is set, else the local key. */
export function webhookSealer(): Sealer {
  if (sealer) return sealer;
  if (config.WEBHOOK_KMS_KEY_ID) sealer = kmsSealer(config.WEBHOOK_KMS_KEY_ID);
  else if (config.WEBHOOK_SEALING_KEY) {
    sealer = localSealer(Buffer.from(config.WEBHOOK_SEALING_KEY, 'base64'));
  } else {
    // Neither: a key for this process only (a test, a tool); nothing it seals outlives it.
    sealer = localSealer(randomBytes(32));
  }
  return sealer;
}
