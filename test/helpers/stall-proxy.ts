import { connect, createServer, type Socket } from 'node:net';

/**
 * What the proxy does with DynamoDB traffic:
 * - `pass`: forwards both ways, a plain TCP relay;
 * - `stall`: accepts requests and never forwards or answers them (a hung table, or a network
 *   path that silently drops packets);
 * - `lose-answers`: forwards every request but drops the answer to those whose X-Amz-Target
 *   ends with `target` (the write lands, its outcome never reaches the service).
 */
export type ProxyMode =
  | { readonly kind: 'pass' }
  | { readonly kind: 'stall' }
  | { readonly kind: 'lose-answers'; readonly target: string };

export interface StallProxy {
  /** http://127.0.0.1:<port>: give it to the stack as DYNAMODB_ENDPOINT. */
  readonly url: string;
  mode: ProxyMode;
  /** Requests that arrived while stalled or whose answers were dropped. */
  readonly swallowed: () => number;
  close(): Promise<void>;
}

/**
 * A TCP proxy in front of DynamoDB Local whose behaviour a test switches at any moment: real
 * sockets, no mock of the store, the service's own SDK client and timeouts in between. The mode
 * is read per chunk, so keep-alive connections opened before a switch obey it too.
 */
export async function startStallProxy(upstream: string): Promise<StallProxy> {
  const { hostname, port } = new URL(upstream);
  const sockets = new Set<Socket>();
  let swallowed = 0;
  const proxy: StallProxy = {
    url: '',
    mode: { kind: 'pass' },
    swallowed: () => swallowed,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  const server = createServer((client) => {
    const table = connect(Number(port), hostname);
    sockets.add(client).add(table);
    // Once an answer is lost, the rest of this connection's answers are too: the client has
    // given up on it (its timeout destroys the socket).
    let losing = false;
    client.on('data', (chunk: Buffer) => {
      const mode = proxy.mode;
      if (mode.kind === 'stall') {
        swallowed++;
        return;
      }
      if (mode.kind === 'lose-answers' && targetOf(chunk)?.endsWith(`.${mode.target}`)) {
        swallowed++;
        losing = true;
      }
      table.write(chunk);
    });
    table.on('data', (chunk: Buffer) => {
      if (!losing) client.write(chunk);
    });
    const end = () => {
      client.destroy();
      table.destroy();
      sockets.delete(client);
      sockets.delete(table);
    };
    client.on('close', end).on('error', end);
    table.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  return Object.assign(proxy, { url: `http://127.0.0.1:${address.port}` });
}

/** The X-Amz-Target of a request whose headers are in this chunk, e.g. DynamoDB_20120810.GetItem. */
const targetOf = (chunk: Buffer): string | undefined =>
  /^x-amz-target:\s*(\S+)\s*$/im.exec(chunk.toString('latin1'))?.[1];
