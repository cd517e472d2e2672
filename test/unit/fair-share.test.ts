import { describe, expect, it } from 'vitest';
import { FairShare } from '../../infra/local/fair-share.js';

// The local server's fair share per API key (infra/local/fair-share.ts).
describe('fair share per key', () => {
  const started = (turn: ReturnType<FairShare['enter']>) => {
    if (typeof turn !== 'function') throw new Error(`not started at once: ${String(turn)}`);
    return turn;
  };

  it('never holds a key alone, however many requests it has in flight', () => {
    const share = new FairShare(2);
    for (let i = 0; i < 10; i++) expect(typeof share.enter('a')).toBe('function');
  });

  it('holds a key at its share while another key has work, in order, until one of its own ends', async () => {
    const share = new FairShare(2);
    const a1 = started(share.enter('a'));
    started(share.enter('a'));
    const b1 = started(share.enter('b'));
    const order: string[] = [];
    const a3 = share.enter('a');
    const a4 = share.enter('a');
    expect(a3).toBeInstanceOf(Promise);
    void (a3 as Promise<() => void>).then(() => order.push('a3'));
    void (a4 as Promise<() => void>).then(() => order.push('a4'));
    // The other key is never held by the busy one.
    const b2 = started(share.enter('b'));
    await Promise.resolve();
    expect(order).toEqual([]);
    a1();
    await Promise.resolve();
    expect(order).toEqual(['a3']);
    b1();
    await Promise.resolve();
    expect(order).toEqual(['a3']);
    // Once the other key is idle, the busy one is alone: what waits goes in.
    b2();
    await Promise.resolve();
    expect(order).toEqual(['a3', 'a4']);
  });

  it('lets the rest in once every other key is idle, and refuses past its waiting bound', async () => {
    const share = new FairShare(1, 2);
    started(share.enter('a'));
    const b = started(share.enter('b'));
    const waits = [share.enter('a'), share.enter('a')];
    expect(share.enter('a')).toBe('refused');
    b();
    await Promise.all(waits);
  });
});
