import { describe, expect, it } from 'vitest';
import {
  type RotationEvent,
  rotationStep,
  type SecretsPort,
} from '../../functions/config/admin-key-rotation.js';

/**
 * Secrets Manager's versions and staging labels, as its rotation protocol moves them: making a
 * version AWSCURRENT moves AWSPREVIOUS to the version it replaced (and AWSPENDING goes).
 */
function secretsManager(initial: string) {
  const values = new Map<string, string>([['v1', initial]]);
  const stages = new Map<string, string[]>([['v1', ['AWSCURRENT']]]);
  const find = (stage: string) => [...stages].find(([, s]) => s.includes(stage))?.[0];
  const port: SecretsPort = {
    describe: async () => ({ rotationEnabled: true, versions: Object.fromEntries(stages) }),
    value: async (_id, { versionId, stage }) => {
      const version = versionId ?? (stage ? find(stage) : undefined);
      if (!version || (stage && !stages.get(version)?.includes(stage))) return undefined;
      return values.get(version);
    },
    putPending: async (_id, token, value) => {
      values.set(token, value);
      stages.set(token, ['AWSPENDING']);
    },
    makeCurrent: async (_id, token, replacing) => {
      for (const [v, s] of stages)
        stages.set(
          v,
          s.filter((x) => x !== 'AWSPREVIOUS'),
        );
      stages.set(replacing, ['AWSPREVIOUS']);
      stages.set(token, ['AWSCURRENT']);
    },
  };
  /** What rotation starts with: Secrets Manager labels the coming version AWSPENDING. */
  const begin = (token: string) => stages.set(token, ['AWSPENDING']);
  const current = () => values.get(find('AWSCURRENT') ?? '');
  const previous = () => values.get(find('AWSPREVIOUS') ?? '');
  return { port, begin, current, previous };
}

const steps = ['createSecret', 'setSecret', 'testSecret', 'finishSecret'] as const;
const rotate = async (sm: ReturnType<typeof secretsManager>, token: string) => {
  sm.begin(token);
  for (const Step of steps) {
    const event: RotationEvent = { SecretId: 'admin-key', ClientRequestToken: token, Step };
    await rotationStep(sm.port, event);
  }
};

describe('admin key rotation', () => {
  it('makes a new random key current and keeps the old one as previous', async () => {
    const sm = secretsManager('old-key');

    await rotate(sm, 'v2');

    expect(sm.current()).toMatch(/^[A-Za-z0-9_-]{48}$/);
    expect(sm.previous()).toBe('old-key');
  });

  it('keeps a key/value secret a key/value secret', async () => {
    const sm = secretsManager('{"ADMIN_API_KEY":"old-key","note":"ops"}');

    await rotate(sm, 'v2');

    const current = JSON.parse(sm.current() ?? '{}');
    expect(current).toEqual({ ADMIN_API_KEY: expect.stringMatching(/^.{48}$/), note: 'ops' });
  });

  it('is idempotent: a retried step changes nothing, a finished rotation stays finished', async () => {
    const sm = secretsManager('old-key');
    sm.begin('v2');
    const create: RotationEvent = { SecretId: 'a', ClientRequestToken: 'v2', Step: 'createSecret' };

    await rotationStep(sm.port, create);
    const pending = await sm.port.value('a', { versionId: 'v2', stage: 'AWSPENDING' });
    await rotationStep(sm.port, create);
    await rotationStep(sm.port, { ...create, Step: 'finishSecret' });
    await rotationStep(sm.port, { ...create, Step: 'finishSecret' });

    expect(await sm.port.value('a', { versionId: 'v2' })).toBe(pending);
    expect([sm.current(), sm.previous()]).toEqual([pending, 'old-key']);
  });

  it('two rotations: the key from before the first is no longer accepted', async () => {
    const sm = secretsManager('first');

    await rotate(sm, 'v2');
    const second = sm.current();
    await rotate(sm, 'v3');

    expect(sm.previous()).toBe(second);
    expect([sm.current(), sm.previous()]).not.toContain('first');
  });

  it('refuses a token that is not a pending version of the secret', async () => {
    const sm = secretsManager('old-key');
    const event: RotationEvent = { SecretId: 'a', ClientRequestToken: 'v9', Step: 'createSecret' };

    await expect(rotationStep(sm.port, event)).rejects.toThrow(/not a version/);
  });
});
