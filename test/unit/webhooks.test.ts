import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Logger } from '../../functions/log.js';
import {
  backoffMs,
  type Delivery,
  type Post,
  signatureOf,
  verifySignature,
  WebhookDispatcher,
} from '../../functions/outbound/webhooks.js';

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };

const delivery = (n: number): Delivery => ({
  eventId: `evt_${n}`,
  eventType: 'budget.exhausted',
  body: JSON.stringify({ event_id: `evt_${n}` }),
});

/** A receiver that answers statuses from a script, per URL, and records each attempt. */
function scripted(answers: (url: string, attempt: number, eventId: string) => number) {
  const calls: { url: string; headers: Record<string, string>; body: string }[] = [];
  const post: Post = async (url, body, headers) => {
    calls.push({ url, headers, body });
    const attempt = Number(headers['x-cycles-delivery-attempt']);
    return answers(url, attempt, headers['x-cycles-event-id'] ?? '');
  };
  return { calls, post };
}

/** Backoff waits recorded, not slept. */
function fakeSleep() {
  const waits: number[] = [];
  return { waits, sleep: async (ms: number) => void waits.push(ms) };
}

const dispatcher = (post: Post, sleep: (ms: number) => Promise<void>, urls = ['https://a.test']) =>
  new WebhookDispatcher({
    urls,
    secret: () => 'shh',
    maxRetries: 3,
    initialDelayMs: 1_000,
    maxDelayMs: 3_000,
    timeoutMs: 1_000,
    post,
    sleep,
    random: () => 1,
    log: silent,
  });

describe('signatureOf', () => {
  it('is the reference scheme: sha256= and the hex HMAC-SHA256 of the raw body', () => {
    const body = '{"event_id":"evt_1"}';

    const header = signatureOf('shh', body);

    expect(header).toBe(`sha256=${createHmac('sha256', 'shh').update(body).digest('hex')}`);
    expect(verifySignature('shh', body, header)).toBe(true);
    expect(verifySignature('shh', `${body} `, header)).toBe(false);
    expect(verifySignature('other', body, header)).toBe(false);
    expect(verifySignature('shh', body, undefined)).toBe(false);
  });
});

describe('backoffMs', () => {
  it('doubles from the initial delay up to the cap, half of it jittered', () => {
    expect([1, 2, 3, 4].map((n) => backoffMs(n, 1_000, 3_000, 1))).toEqual([
      1_000, 2_000, 3_000, 3_000,
    ]);
    expect(backoffMs(2, 1_000, 3_000, 0)).toBe(1_000);
  });
});

describe('WebhookDispatcher', () => {
  it('signs each delivery and retries 5xx with backoff until it goes through', async () => {
    const { calls, post } = scripted((_, attempt) => (attempt <= 2 ? 500 : 200));
    const { waits, sleep } = fakeSleep();
    const d = dispatcher(post, sleep);

    d.enqueue([delivery(1)]);
    await d.idle();

    expect(calls.map((c) => c.headers['x-cycles-delivery-attempt'])).toEqual(['1', '2', '3']);
    expect(waits).toEqual([1_000, 2_000]);
    for (const c of calls) {
      expect(verifySignature('shh', c.body, c.headers['x-cycles-signature'])).toBe(true);
      expect(c.headers).toMatchObject({
        'content-type': 'application/json',
        'x-cycles-event-id': 'evt_1',
        'x-cycles-event-type': 'budget.exhausted',
      });
    }
    expect(d.stats()).toEqual({ delivered: 1, retried: 2, dropped: 0, pending: 0 });
  });

  it('drops a delivery after its bounded retries, and one a receiver refuses at once', async () => {
    const { calls, post } = scripted((_, __, id) => (id === 'evt_1' ? 503 : 400));
    const { sleep } = fakeSleep();
    const d = dispatcher(post, sleep);

    d.enqueue([delivery(1), delivery(2)]);
    await d.idle();

    expect(calls.filter((c) => c.headers['x-cycles-event-id'] === 'evt_1')).toHaveLength(4);
    expect(calls.filter((c) => c.headers['x-cycles-event-id'] === 'evt_2')).toHaveLength(1);
    expect(d.stats()).toMatchObject({ delivered: 0, dropped: 2, pending: 0 });
  });

  it('retries a network error like a 5xx', async () => {
    let failures = 1;
    const post: Post = async () => {
      if (failures-- > 0) throw new Error('ECONNREFUSED');
      return 204;
    };
    const { sleep } = fakeSleep();
    const d = dispatcher(post, sleep);

    d.enqueue([delivery(1)]);
    await d.idle();

    expect(d.stats()).toMatchObject({ delivered: 1, retried: 1, dropped: 0 });
  });

  it('lets a receiver that never answers hold only its own deliveries', async () => {
    const stuck: (() => void)[] = [];
    const post: Post = (url, _body, _headers, signal) =>
      url.includes('dead')
        ? new Promise((_, reject) => {
            stuck.push(() => reject(new Error('aborted')));
            signal.addEventListener('abort', () => reject(signal.reason));
          })
        : Promise.resolve(204);
    const { sleep } = fakeSleep();
    const d = dispatcher(post, sleep, ['https://dead.test', 'https://alive.test']);

    d.enqueue(Array.from({ length: 20 }, (_, i) => delivery(i)));
    await new Promise((r) => setTimeout(r, 20));

    expect(d.stats()).toMatchObject({ delivered: 20, pending: 20 });
    expect(stuck.length).toBeLessThanOrEqual(8);
    d.stop();
    expect(await d.idle(Date.now() + 1_000)).toBe(true);
  });

  it('drops what does not fit in a full queue, counted', async () => {
    const post: Post = () => new Promise(() => {});
    const d = new WebhookDispatcher({
      urls: ['https://slow.test'],
      secret: () => 'shh',
      maxRetries: 0,
      initialDelayMs: 1,
      maxDelayMs: 1,
      timeoutMs: 60_000,
      maxPendingPerUrl: 5,
      post,
      log: silent,
    });

    d.enqueue(Array.from({ length: 8 }, (_, i) => delivery(i)));

    expect(d.stats()).toMatchObject({ dropped: 3, pending: 5 });
    d.stop();
  });
});
