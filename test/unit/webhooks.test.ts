import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { afterAttempt, type Delivery } from '../../functions/domain/deliveries.js';
import { DomainError } from '../../functions/domain/errors.js';
import {
  EVENT_CATEGORIES,
  EVENT_TYPES,
  type EventDocument,
  type EventType,
  isTenantEventType,
  SYSTEM_TENANT,
} from '../../functions/domain/events.js';
import { parseTraceparent, traceOf } from '../../functions/domain/trace.js';
import {
  blockedAddress,
  checkSecurity,
  checkTargetUrl,
  defaultWebhookSecurity,
} from '../../functions/domain/webhook-security.js';
import {
  afterFailure,
  changedSubscription,
  changeEventType,
  checkSelectors,
  DEFAULT_RETRY_POLICY,
  deliverable,
  newSubscription,
  retryDelayMs,
  scopeMatches,
  statusChange,
} from '../../functions/domain/webhooks.js';
import { localSealer } from '../../functions/outbound/sealing.js';
import {
  deliveryHeaders,
  signatureOf,
  verifySignature,
} from '../../functions/outbound/webhooks.js';

const invalid = (f: () => unknown) => {
  try {
    f();
  } catch (error) {
    return error instanceof DomainError && error.code === 'INVALID_REQUEST';
  }
  return false;
};

const AT = '2026-01-15T12:00:00.000Z';
const aSubscription = (owner = 'acme', types: EventType[] = ['budget.exhausted']) =>
  newSubscription('whsub_1', owner, { url: 'https://hooks.example.com/x', eventTypes: types }, AT);

const anEvent = (over: Partial<EventDocument> = {}): EventDocument => ({
  event_id: 'evt_1',
  event_type: 'budget.exhausted',
  category: 'budget',
  timestamp: AT,
  tenant_id: 'acme',
  scope: 'tenant:acme/workspace:w',
  source: 'budget-reservations',
  ...over,
});

describe('the webhook subscription invariants (reference: WEBHOOK SUBSCRIPTION INVARIANTS)', () => {
  it('refuses a subscription with no selector at all, whoever owns it', () => {
    expect(invalid(() => checkSelectors('acme', [], []))).toBe(true);
    expect(invalid(() => checkSelectors(SYSTEM_TENANT, [], []))).toBe(true);
  });

  it('refuses every admin-only type and category on a tenant-owned subscription, allows them for __system__', () => {
    for (const type of EVENT_TYPES) {
      const refused = invalid(() => checkSelectors('acme', [type], []));
      expect(refused, type).toBe(!isTenantEventType(type));
      expect(
        invalid(() => checkSelectors(SYSTEM_TENANT, [type], [])),
        type,
      ).toBe(false);
    }
    for (const category of EVENT_CATEGORIES) {
      const tenantAccessible = ['budget', 'reservation', 'tenant'].includes(category);
      expect(
        invalid(() => checkSelectors('acme', [], [category])),
        category,
      ).toBe(!tenantAccessible);
    }
  });

  it('holds on an update: the result is checked, a category-only subscription is allowed', () => {
    const s = aSubscription('acme');

    const categoryOnly = changedSubscription(
      s,
      { eventTypes: [], eventCategories: ['budget'] },
      AT,
    );

    expect(categoryOnly.after.eventTypes).toEqual([]);
    expect(invalid(() => changedSubscription(s, { eventTypes: [] }, AT))).toBe(true);
    expect(invalid(() => changedSubscription(s, { eventCategories: ['webhook'] }, AT))).toBe(true);
    expect(invalid(() => changedSubscription(s, { eventTypes: ['api_key.created'] }, AT))).toBe(
      true,
    );
  });
});

describe('changedSubscription', () => {
  it('answers the subscription itself when nothing changes (no write, no event)', () => {
    const s = aSubscription();

    expect(changedSubscription(s, { url: s.url, eventTypes: s.eventTypes }, AT).after).toBe(s);
  });

  it('names what changed, and the event the change means', () => {
    const s = aSubscription();

    const { after, changed } = changedSubscription(
      s,
      { url: 'https://hooks.example.com/y', status: 'PAUSED', rotatesSecret: true },
      AT,
    );

    expect(changed).toEqual(['url', 'signing_secret']);
    expect(changeEventType(s, after)).toBe('webhook.paused');
    expect(changeEventType(after, { ...after, status: 'ACTIVE' })).toBe('webhook.resumed');
    expect(changeEventType(s, { ...s, name: 'n' })).toBe('webhook.updated');
  });

  it('clears the run of failures when an operator re-enables a DISABLED subscription', () => {
    const s = { ...aSubscription(), status: 'DISABLED' as const, consecutiveFailures: 10 };

    const { after } = changedSubscription(s, { status: 'ACTIVE' }, AT);

    expect(after).toMatchObject({ status: 'ACTIVE', consecutiveFailures: 0, updatedAt: AT });
  });

  it('pauses and resumes in bulk, never resuming a DISABLED one', () => {
    const s = aSubscription();
    expect(statusChange(s, 'PAUSED')).toBe('applies');
    expect(statusChange({ ...s, status: 'PAUSED' }, 'PAUSED')).toBe('already');
    expect(statusChange({ ...s, status: 'DISABLED' }, 'ACTIVE')).toBe('refused');
    expect(statusChange({ ...s, status: 'DISABLED' }, 'PAUSED')).toBe('already');
  });
});

describe('deliverable', () => {
  it("gives a tenant's subscription its own tenant-accessible events only, the operator's every tenant's", () => {
    const tenant = aSubscription('acme', ['budget.exhausted', 'tenant.created']);
    const operator = { ...aSubscription(SYSTEM_TENANT), eventCategories: [...EVENT_CATEGORIES] };

    expect(deliverable(tenant, anEvent())).toBe(true);
    expect(deliverable(tenant, anEvent({ tenant_id: 'other' }))).toBe(false);
    expect(deliverable(operator, anEvent({ tenant_id: 'other' }))).toBe(true);
    // Even a row that carried an admin category (written before the rule) delivers none.
    const leaky = { ...tenant, eventCategories: ['api_key' as const] };
    expect(
      deliverable(leaky, anEvent({ event_type: 'api_key.created', category: 'api_key' })),
    ).toBe(false);
    expect(deliverable({ ...tenant, status: 'PAUSED' }, anEvent())).toBe(false);
  });

  it('narrows by scope filter (an event without a scope never matches one) and by threshold', () => {
    const s = {
      ...aSubscription('acme', ['budget.exhausted', 'budget.threshold_crossed']),
      scopeFilter: 'tenant:acme/workspace:*',
      thresholds: { budget_utilization: [0.8] },
    };

    expect(deliverable(s, anEvent())).toBe(true);
    expect(deliverable(s, anEvent({ scope: 'tenant:acme' }))).toBe(false);
    expect(deliverable(s, anEvent({ scope: undefined }))).toBe(false);
    const crossed = (threshold: number) =>
      anEvent({ event_type: 'budget.threshold_crossed', data: { threshold } });
    expect(deliverable(s, crossed(0.8))).toBe(true);
    expect(deliverable(s, crossed(0.5))).toBe(false);
    expect(scopeMatches('tenant:a.b/*', 'tenant:aXb/w')).toBe(false);
  });
});

describe('retries (the reference WebhookRetryPolicy)', () => {
  const delivery: Delivery = {
    deliveryId: 'dlv_1',
    subscriptionId: 'whsub_1',
    tenant: 'acme',
    eventId: 'evt_1',
    eventType: 'budget.exhausted',
    origin: 'event',
    status: 'PENDING',
    createdAtMs: 0,
    attemptedAtMs: 0,
    attempts: 0,
  };
  const policy = { ...DEFAULT_RETRY_POLICY, maxRetries: 2 };

  it('waits initial × multiplier^(n−1), at most max_delay_ms', () => {
    expect([1, 2, 3, 10].map((n) => retryDelayMs(DEFAULT_RETRY_POLICY, n))).toEqual([
      1_000, 2_000, 4_000, 60_000,
    ]);
  });

  it('retries every failure max_retries times, then gives up; a 2xx ends it', () => {
    const failed = { status: 500, latencyMs: 10 };

    const first = afterAttempt(delivery, policy, failed, 1_000);
    const second = afterAttempt(
      first,
      policy,
      { status: 0, latencyMs: 5, error: 'timed out' },
      3_000,
    );
    const third = afterAttempt(second, policy, { status: 404, latencyMs: 1 }, 7_000);
    const ok = afterAttempt(first, policy, { status: 204, latencyMs: 2 }, 2_500);

    expect(first).toMatchObject({
      status: 'RETRYING',
      attempts: 1,
      nextRetryAtMs: 2_010,
      responseStatus: 500,
    });
    expect(second).toMatchObject({ status: 'RETRYING', attempts: 2, errorMessage: 'timed out' });
    expect(second.responseStatus).toBeUndefined();
    expect(third).toMatchObject({ status: 'FAILED', attempts: 3, completedAtMs: 7_001 });
    expect(third.nextRetryAtMs).toBeUndefined();
    expect(ok).toMatchObject({ status: 'SUCCESS', attempts: 2, responseStatus: 204 });
    expect(ok.errorMessage).toBeUndefined();
  });

  it('never retries a test probe', () => {
    const probe = { ...delivery, origin: 'test' as const };
    expect(afterAttempt(probe, policy, { status: 503, latencyMs: 1 }, 0).status).toBe('FAILED');
  });

  it('disables a subscription once its run of failed deliveries reaches the limit', () => {
    const s = { ...aSubscription(), disableAfterFailures: 3 };
    expect(afterFailure({ ...s, consecutiveFailures: 1 })).toEqual({
      failures: 2,
      disables: false,
    });
    expect(afterFailure({ ...s, consecutiveFailures: 2 })).toEqual({ failures: 3, disables: true });
    expect(afterFailure({ ...s, status: 'DISABLED', consecutiveFailures: 5 }).disables).toBe(false);
  });
});

describe('webhook security (SSRF)', () => {
  const strict = defaultWebhookSecurity(false);
  const local = defaultWebhookSecurity(true);

  it('blocks private, loopback, link-local and metadata addresses by default, IPv4 in IPv6 too', () => {
    for (const address of [
      '10.1.2.3',
      '172.20.0.1',
      '192.168.1.1',
      '127.0.0.1',
      '169.254.169.254',
      '::1',
      'fd00::1',
      'fe80::1',
      '::ffff:127.0.0.1',
      '0.0.0.0',
      '100.64.0.1',
    ]) {
      expect(blockedAddress(strict, [address]), address).toBe(address);
    }
    expect(blockedAddress(strict, ['93.184.216.34', '2606:2800:220:1::1'])).toBeUndefined();
    expect(blockedAddress(local, ['127.0.0.1'])).toBeUndefined();
    expect(blockedAddress(local, ['169.254.169.254'])).toBe('169.254.169.254');
  });

  it('wants https (http only when allowed), no credentials, a matching pattern when there are any', () => {
    expect(invalid(() => checkTargetUrl(strict, 'http://hooks.example.com/x'))).toBe(true);
    expect(invalid(() => checkTargetUrl(local, 'http://127.0.0.1:8787/x'))).toBe(false);
    expect(invalid(() => checkTargetUrl(strict, 'https://u:p@hooks.example.com/'))).toBe(true);
    expect(invalid(() => checkTargetUrl(strict, 'ftp://hooks.example.com/'))).toBe(true);
    const patterned = { ...strict, allowedUrlPatterns: ['https://*.example.com/*'] };
    expect(invalid(() => checkTargetUrl(patterned, 'https://a.example.com/x'))).toBe(false);
    expect(invalid(() => checkTargetUrl(patterned, 'https://example.org/x'))).toBe(true);
  });

  it('refuses a configuration with a range that is not one', () => {
    expect(invalid(() => checkSecurity({ ...strict, blockedCidrRanges: ['10.0.0.0/33'] }))).toBe(
      true,
    );
    expect(invalid(() => checkSecurity({ ...strict, blockedCidrRanges: ['nonsense'] }))).toBe(true);
    expect(checkSecurity(strict)).toBe(strict);
  });
});

describe('W3C trace context (reference: CORRELATION AND TRACING)', () => {
  const fresh = () => 'a'.repeat(32);
  const valid = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00';

  it('takes traceparent over X-Cycles-Trace-Id, keeps its flags, and makes one up when neither is valid', () => {
    expect(traceOf(valid, 'b'.repeat(32), fresh)).toEqual({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      flags: '00',
      fromTraceparent: true,
    });
    expect(traceOf('garbage', 'b'.repeat(32), fresh)).toMatchObject({
      traceId: 'b'.repeat(32),
      flags: '01',
    });
    expect(traceOf(undefined, '0'.repeat(32), fresh).traceId).toBe(fresh());
    expect(parseTraceparent(`00-${'0'.repeat(32)}-00f067aa0ba902b7-01`)).toBeUndefined();
    expect(
      parseTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'),
    ).toBeUndefined();
  });

  it('answers a valid trace id for any header values, never throwing', () => {
    fc.assert(
      fc.property(fc.option(fc.string()), fc.option(fc.string()), (parent, id) => {
        const trace = traceOf(parent ?? undefined, id ?? undefined, () =>
          randomBytes(16).toString('hex'),
        );
        expect(trace.traceId).toMatch(/^[0-9a-f]{32}$/);
        expect(trace.traceId).not.toMatch(/^0+$/);
      }),
    );
  });
});

describe('sealing (local AES-256-GCM)', () => {
  it('opens what it sealed for the same subscription only', async () => {
    const sealer = localSealer(randomBytes(32));

    const sealed = await sealer.seal('whsec_abc', 'whsub_1');

    expect(sealed).not.toContain('whsec_abc');
    expect(await sealer.open(sealed, 'whsub_1')).toBe('whsec_abc');
    await expect(sealer.open(sealed, 'whsub_2')).rejects.toThrow();
    await expect(localSealer(randomBytes(32)).open(sealed, 'whsub_1')).rejects.toThrow();
  });
});

describe('a delivery request', () => {
  it('is signed over the raw body and keeps the protocol headers over the subscription’s own', () => {
    const body = '{"event_id":"evt_1"}';

    const headers = deliveryHeaders({
      url: 'https://hooks.example.com/x',
      body,
      secret: 's3cret',
      eventId: 'evt_1',
      eventType: 'budget.exhausted',
      deliveryId: 'dlv_1',
      attempt: 2,
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      traceFlags: '01',
      headers: { Authorization: 'Bearer t', 'X-Cycles-Signature': 'forged', 'content-type': 'x' },
    });

    expect(headers.Authorization).toBe('Bearer t');
    expect(headers['X-Cycles-Signature']).toBeUndefined();
    expect(headers['x-cycles-signature']).toBe(signatureOf('s3cret', body));
    expect(verifySignature('s3cret', body, headers['x-cycles-signature'])).toBe(true);
    expect(verifySignature('other', body, headers['x-cycles-signature'])).toBe(false);
    expect(headers['content-type']).toBe('application/json');
    expect(headers.traceparent).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01$/);
    expect(headers['x-cycles-delivery-attempt']).toBe('2');
  });
});
