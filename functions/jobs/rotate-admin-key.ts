import {
  DescribeSecretCommand,
  GetSecretValueCommand,
  PutSecretValueCommand,
  SecretsManagerClient,
  UpdateSecretVersionStageCommand,
} from '@aws-sdk/client-secrets-manager';
import {
  type RotationEvent,
  rotationStep,
  type SecretsPort,
} from '../config/admin-key-rotation.js';
import { config } from '../config/settings.js';
import { log } from '../log.js';

const client = new SecretsManagerClient({ region: config.AWS_REGION, maxAttempts: 3 });

const secrets: SecretsPort = {
  async describe(secretId) {
    const out = await client.send(new DescribeSecretCommand({ SecretId: secretId }));
    return {
      rotationEnabled: out.RotationEnabled === true,
      versions: out.VersionIdsToStages ?? {},
    };
  },
  async value(secretId, { versionId, stage }) {
    try {
      const out = await client.send(
        new GetSecretValueCommand({
          SecretId: secretId,
          VersionId: versionId,
          VersionStage: stage,
        }),
      );
      return out.SecretString;
    } catch (error) {
      if ((error as Error).name === 'ResourceNotFoundException') return undefined;
      throw error;
    }
  },
  async putPending(secretId, token, value) {
    await client.send(
      new PutSecretValueCommand({
        SecretId: secretId,
        ClientRequestToken: token,
        SecretString: value,
        VersionStages: ['AWSPENDING'],
      }),
    );
  },
  async makeCurrent(secretId, token, replacing) {
    await client.send(
      new UpdateSecretVersionStageCommand({
        SecretId: secretId,
        VersionStage: 'AWSCURRENT',
        MoveToVersionId: token,
        RemoveFromVersionId: replacing,
      }),
    );
  },
};

/** Invoked by Secrets Manager on the admin key's rotation schedule, once per step. */
export const handler = async (event: RotationEvent): Promise<void> => {
  log.info('admin key rotation', { step: event.Step, version: event.ClientRequestToken });
  await rotationStep(secrets, event);
};
