import { describe, expect, it } from 'vitest';
import { DomainError } from '../../functions/domain/errors.js';
import { deriveScopes, parseScope, type Subject } from '../../functions/domain/scopes.js';

const T = 'tenant:acme';

describe('deriveScopes', () => {
  it('affects every prefix level, root first: tenant + workspace + app is three scopes', () => {
    const derived = deriveScopes('acme', { workspace: 'w', app: 'a' });

    expect(derived).toEqual({
      scopes: [T, `${T}/workspace:w`, `${T}/workspace:w/app:a`],
      scopePath: `${T}/workspace:w/app:a`,
    });
  });

  it('orders the six levels canonically whatever the key order of the subject', () => {
    const subject: Subject = {
      toolset: 'ts',
      agent: 'ag',
      workflow: 'wf',
      app: 'a',
      workspace: 'w',
      tenant: 'acme',
    };

    const { scopePath } = deriveScopes('acme', subject);

    expect(scopePath).toBe(`${T}/workspace:w/app:a/workflow:wf/agent:ag/toolset:ts`);
  });

  it('skips absent levels instead of leaving holes', () => {
    const { scopes } = deriveScopes('acme', { app: 'a', agent: 'ag' });

    expect(scopes).toEqual([T, `${T}/app:a`, `${T}/app:a/agent:ag`]);
  });

  it('puts dimensions last, one segment each, sorted by key', () => {
    const { scopes } = deriveScopes('acme', {
      workspace: 'w',
      dimensions: { region: 'eu', env: 'prod', cost_center: 'cc-1' },
    });

    expect(scopes).toEqual([
      T,
      `${T}/workspace:w`,
      `${T}/workspace:w/dimensions:cost_center=cc-1`,
      `${T}/workspace:w/dimensions:cost_center=cc-1/dimensions:env=prod`,
      `${T}/workspace:w/dimensions:cost_center=cc-1/dimensions:env=prod/dimensions:region=eu`,
    ]);
  });

  it('gives each scope as the cumulative prefix of the one after it', () => {
    const { scopes, scopePath } = deriveScopes('acme', {
      workspace: 'w',
      app: 'a',
      toolset: 't',
      dimensions: { b: '2', a: '1' },
    });

    for (let i = 1; i < scopes.length; i++) {
      expect(scopes[i]?.startsWith(`${scopes[i - 1]}/`)).toBe(true);
      expect(scopes[i]?.split('/')).toHaveLength(i + 1);
    }
    expect(scopes.at(-1)).toBe(scopePath);
  });

  it('derives the root from the effective tenant, not subject.tenant', () => {
    const { scopes } = deriveScopes('acme', { tenant: 'acme', workspace: 'w' });

    expect(scopes[0]).toBe(T);
  });

  it('gives the tenant alone one scope', () => {
    expect(deriveScopes('acme', { tenant: 'acme' })).toEqual({ scopes: [T], scopePath: T });
  });

  it.each<[string, Subject]>([
    ["a '/' in a value", { workspace: 'a/b' }],
    ["a ':' in a value", { workspace: 'a:b' }],
    ["a '=' in a value", { app: 'a=b' }],
    ['a space in a value', { workspace: 'a b' }],
    ['a tab in a value', { agent: 'a\tb' }],
    ['an empty value', { workspace: '' }],
    ['a value over 128 characters', { workspace: 'x'.repeat(129) }],
    ["a '/' in a dimension value", { workspace: 'w', dimensions: { env: 'a/b' } }],
    ["a '=' in a dimension value", { workspace: 'w', dimensions: { env: 'a=b' } }],
    ["a '=' in a dimension key", { workspace: 'w', dimensions: { 'e=v': 'x' } }],
    ["a ':' in a dimension key", { workspace: 'w', dimensions: { 'e:v': 'x' } }],
    ['a space in a dimension key', { workspace: 'w', dimensions: { 'e v': 'x' } }],
    ['an empty dimension key', { workspace: 'w', dimensions: { '': 'x' } }],
    ['an empty dimension value', { workspace: 'w', dimensions: { env: '' } }],
    [
      'a dimension key over 64 characters',
      { workspace: 'w', dimensions: { ['k'.repeat(65)]: 'x' } },
    ],
    [
      'more than 16 dimensions',
      {
        workspace: 'w',
        dimensions: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])),
      },
    ],
  ])('rejects %s with INVALID_REQUEST', (_, subject) => {
    const derive = () => deriveScopes('acme', subject);

    expect(derive).toThrow(DomainError);
    expect(derive).toThrow(expect.objectContaining({ code: 'INVALID_REQUEST' }));
  });

  it('accepts the longest allowed values', () => {
    const subject: Subject = {
      workspace: 'x'.repeat(128),
      dimensions: { ['k'.repeat(64)]: 'v'.repeat(128) },
    };

    const { scopes } = deriveScopes('acme', subject);

    expect(scopes).toHaveLength(3);
  });

  it('rejects an invalid effective tenant', () => {
    expect(() => deriveScopes('a/b', { workspace: 'w' })).toThrow(DomainError);
  });
});

describe('parseScope', () => {
  it.each([
    T,
    `${T}/workspace:w`,
    `${T}/app:a`,
    `${T}/workspace:w/app:a/workflow:f/agent:g/toolset:t`,
    `${T}/dimensions:env=prod`,
    `${T}/workspace:w/dimensions:a=1/dimensions:b=2`,
  ])('accepts the canonical scope %s and gives back its segments', (scope) => {
    const segments = parseScope(scope);

    expect(segments.map((s) => `${s.kind}:${s.value}`).join('/')).toBe(scope);
    expect(segments[0]).toEqual({ kind: 'tenant', value: 'acme' });
  });

  it('refuses a subject whose budget levels make a path over 1000 characters, not tags', () => {
    const v = 'v'.repeat(128);
    const dimensions = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`k${i}`, v]));
    const derive = (budgeted: ReadonlySet<string>) =>
      deriveScopes('acme', { workspace: 'w', dimensions }, budgeted);

    expect(() => derive(new Set(Object.keys(dimensions)))).toThrow(
      expect.objectContaining({ code: 'INVALID_REQUEST' }),
    );
    // The same dimensions as tags are not in the path.
    expect(derive(new Set()).scopePath).toBe('tenant:acme/workspace:w');
  });

  it('agrees with deriveScopes on every derived scope', () => {
    const { scopes } = deriveScopes('acme', {
      workspace: 'w',
      agent: 'g',
      dimensions: { z: '1', a: '2' },
    });

    for (const scope of scopes) expect(() => parseScope(scope)).not.toThrow();
  });

  it.each([
    ['an empty scope', ''],
    ['a scope over 4096 characters', `${T}/workspace:${'w'.repeat(4_100)}`],
    // Valid segments, but longer than a DynamoDB key holds (MAX_SCOPE_LENGTH).
    [
      'a scope over 1000 characters',
      `${T}/${Array.from({ length: 8 }, (_, i) => `dimensions:k${i}=${'v'.repeat(128)}`).join('/')}`,
    ],
    ['a scope not rooted at a tenant', 'workspace:w'],
    ['levels out of order', `${T}/app:a/workspace:w`],
    ['a repeated level', `${T}/workspace:w/workspace:v`],
    ['a tenant that is not first', `workspace:w/${T}`],
    ['a second tenant', `${T}/tenant:other`],
    ['an unknown level', `${T}/galaxy:far`],
    ['a segment without a colon', `${T}/workspace`],
    ['an empty value', `${T}/workspace:`],
    ['an empty segment', `${T}//workspace:w`],
    ['a trailing slash', `${T}/workspace:w/`],
    ['a space in a value', `${T}/workspace:a b`],
    ['unsorted dimensions', `${T}/dimensions:b=2/dimensions:a=1`],
    ['a duplicated dimension', `${T}/dimensions:a=1/dimensions:a=1`],
    ['a dimension without =', `${T}/dimensions:env`],
    ['a dimension before a level', `${T}/dimensions:a=1/workspace:w`],
    ['an upper-case level name', `${T}/Workspace:w`],
  ])('rejects %s', (_, scope) => {
    const parse = () => parseScope(scope);

    expect(parse).toThrow(DomainError);
    expect(parse).toThrow(expect.objectContaining({ code: 'INVALID_REQUEST' }));
  });
});

describe('case', () => {
  it('derives standard levels in lowercase, keeping the tenant and dimension values as sent', () => {
    const { scopes } = deriveScopes('Acme', {
      workspace: 'Prod',
      agent: 'Summarizer',
      dimensions: { Run: 'AbC' },
    });

    expect(scopes).toEqual([
      'tenant:Acme',
      'tenant:Acme/workspace:prod',
      'tenant:Acme/workspace:prod/agent:summarizer',
      'tenant:Acme/workspace:prod/agent:summarizer/dimensions:Run=AbC',
    ]);
  });

  it('reads a mixed-case scope as its canonical lowercase form', () => {
    const segments = parseScope('tenant:acme/workspace:Prod/agent:A1');

    expect(segments.map((s) => `${s.kind}:${s.value}`).join('/')).toBe(
      'tenant:acme/workspace:prod/agent:a1',
    );
  });
});
