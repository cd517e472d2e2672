import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sleep } from './fixtures.js';
import type { Json } from './http.js';

/**
 * A webhook receiver on a real socket (127.0.0.1, a free port): it keeps every request it gets,
 * and answers as told — a status, or never (a receiver that hangs).
 */
export interface Received {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** The raw body, as signed. */
  readonly body: string;
  readonly event: Json;
  readonly at: number;
}

export interface Receiver {
  readonly url: string;
  readonly received: Received[];
  /** The answer to each request: a status, or 'hang' (no answer until the receiver closes). */
  answer: (r: Received) => number | 'hang';
  /** Requests still waiting for an answer ('hang'). */
  readonly hanging: () => number;
  close(): Promise<void>;
}

export async function startReceiver(path = '/hooks'): Promise<Receiver> {
  let open = 0;
  const receiver: Receiver = {
    url: '',
    received: [],
    answer: () => 204,
    hanging: () => open,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const r: Received = {
        path: req.url ?? '',
        headers: req.headers,
        body,
        event: JSON.parse(body) as Json,
        at: Date.now(),
      };
      receiver.received.push(r);
      const answer = receiver.answer(r);
      if (answer === 'hang') {
        open++;
        res.on('close', () => open--);
        return;
      }
      res.writeHead(answer).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  Object.assign(receiver, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
  });
  return receiver;
}

/** Waits (polling, the stream and the worker being asynchronous) until `done` holds. */
export async function eventually<T>(
  done: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await done();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}
