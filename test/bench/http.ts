import { Agent, request } from 'node:http';

export type Json = Record<string, unknown>;

export interface Reply {
  readonly status: number;
  readonly body: Json;
  /** Retry-After in seconds, when the answer carried one. */
  readonly retryAfter?: number | undefined;
}

/** A non-2xx answer where the bench expected success. */
export class UnexpectedReply extends Error {
  constructor(
    readonly status: number,
    readonly what: string,
    body: unknown,
  ) {
    super(`${what}: HTTP ${status} ${JSON.stringify(body).slice(0, 300)}`);
  }
}

/**
 * A lean keep-alive JSON client on node:http: the load generator shares two cores with the
 * server and DynamoDB Local, so it should spend as little CPU per request as it can.
 */
export class HttpTarget {
  private readonly agent: Agent;
  private readonly host: string;
  private readonly port: number;

  /** `maxSockets`: connections at most (256 unless told): past it requests queue in this client. */
  constructor(
    readonly baseUrl: string,
    maxSockets = 256,
  ) {
    this.agent = new Agent({ keepAlive: true, maxSockets });
    const url = new URL(baseUrl);
    if (url.protocol !== 'http:') throw new Error(`only http:// targets: ${baseUrl}`);
    this.host = url.hostname;
    this.port = Number(url.port || 80);
  }

  /**
   * Requests retried because a kept-alive socket was closed by the server as it was reused
   * (Node's documented keep-alive race). Safe: every write carries an idempotency key.
   */
  staleSocketRetries = 0;

  send(
    method: 'GET' | 'POST' | 'PATCH',
    path: string,
    headers: Record<string, string>,
    body?: unknown,
  ): Promise<Reply> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const attempt = (retried: boolean): Promise<Reply> =>
      new Promise((resolve, reject) => {
        const req = request(
          {
            agent: this.agent,
            host: this.host,
            port: this.port,
            method,
            path,
            headers: {
              ...headers,
              ...(payload !== undefined && {
                'content-type': 'application/json',
                'content-length': Buffer.byteLength(payload),
              }),
            },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              let parsed: Json = {};
              try {
                parsed = text ? (JSON.parse(text) as Json) : {};
              } catch {
                parsed = { raw: text.slice(0, 200) };
              }
              const retryAfter = Number(res.headers['retry-after']);
              resolve({
                status: res.statusCode ?? 0,
                body: parsed,
                ...(Number.isFinite(retryAfter) && { retryAfter }),
              });
            });
            res.on('error', reject);
          },
        );
        req.on('error', (error: NodeJS.ErrnoException) => {
          if (!retried && req.reusedSocket && error.code === 'ECONNRESET') {
            this.staleSocketRetries++;
            resolve(attempt(true));
          } else reject(error);
        });
        // A request that hangs must fail the run, not stall it.
        req.setTimeout(60_000, () =>
          req.destroy(new Error(`${method} ${path}: no answer in 60 s`)),
        );
        if (payload !== undefined) req.write(payload);
        req.end();
      });
    return attempt(false);
  }

  /** Sends and insists on a 2xx answer. */
  async expect(
    what: string,
    method: 'GET' | 'POST' | 'PATCH',
    path: string,
    headers: Record<string, string>,
    body?: unknown,
  ): Promise<Json> {
    const reply = await this.send(method, path, headers, body);
    if (reply.status < 200 || reply.status > 299)
      throw new UnexpectedReply(reply.status, what, reply.body);
    return reply.body;
  }

  close(): void {
    this.agent.destroy();
  }
}
