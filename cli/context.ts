import {
  type AdminApi,
  adminApi,
  type Credentials,
  type RuntimeApi,
  runtimeApi,
} from '../client/index.js';
import { type Config, ENV, mask } from './config.js';
import { CliError, EXIT } from './exit-codes.js';
import { fieldOf, type Output } from './output.js';

/** What the CLI needs from its process: injected, so tests run it in-process too. */
export interface Io {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly home: string;
  /** Standard input, whole (a key to validate, a bulk file given as `-`). */
  readonly stdin: () => Promise<string>;
  /** Aborted on Ctrl-C: `watch` stops cleanly, a request in flight is abandoned. */
  readonly signal: AbortSignal;
  readonly fetch?: (request: Request, init?: RequestInit) => Promise<Response>;
}

export interface GlobalOptions {
  readonly json?: boolean;
  readonly field?: string;
  readonly profile?: string;
  readonly config?: string;
  readonly adminUrl?: string;
  readonly runtimeUrl?: string;
  readonly as?: 'admin' | 'tenant';
  /** Seconds per request. */
  readonly timeout: number;
  readonly verbose?: boolean;
}

/** Which keys an operation takes (its document's `security`). */
export type Accepts = 'admin' | 'tenant' | 'either';

const USER_AGENT = 'budget-reservations-cli';

/** One command's run: its configuration, its API clients and its output. */
export class Context {
  constructor(
    readonly config: Config,
    readonly options: GlobalOptions,
    readonly io: Io,
  ) {}

  /** The admin server, with the key the operation takes (the admin key first: `--as` chooses). */
  admin(accepts: Accepts = 'admin'): AdminApi {
    return adminApi({
      baseUrl: this.config.adminUrl,
      auth: this.credentials(accepts),
      init: { fetch: (request) => this.send(request) },
    });
  }

  /** The runtime server, with the tenant key (the admin key where the operation takes it). */
  runtime(accepts: Accepts = 'tenant'): RuntimeApi {
    return runtimeApi({
      baseUrl: this.config.runtimeUrl,
      auth: this.credentials(accepts),
      init: { fetch: (request) => this.send(request) },
    });
  }

  /**
   * Whether an operation both planes serve (events, webhooks) goes to the tenant's own route:
   * when the tenant key is the one in use (`--as tenant`, or no admin key configured).
   */
  asTenant(): boolean {
    return 'tenantKey' in this.credentials('either');
  }

  /** Neither key: the health and OpenAPI documents. */
  anonymous(server: 'admin' | 'runtime'): AdminApi | RuntimeApi {
    const init = { fetch: (request: Request) => this.send(request) };
    return server === 'admin'
      ? adminApi({ baseUrl: this.config.adminUrl, init })
      : runtimeApi({ baseUrl: this.config.runtimeUrl, init });
  }

  private credentials(accepts: Accepts): Credentials {
    const kind =
      accepts === 'either'
        ? (this.options.as ?? (this.config.adminKey ? 'admin' : 'tenant'))
        : accepts;
    if (kind === 'admin') {
      if (!this.config.adminKey) {
        throw new CliError(
          `this needs the admin key: set ${ENV.adminKey}, or admin_api_key in a profile (${this.config.configFile})`,
          EXIT.AUTH,
        );
      }
      return { adminKey: this.config.adminKey };
    }
    if (!this.config.tenantKey) {
      throw new CliError(
        `this needs a tenant API key: set ${ENV.tenantKey}, or tenant_api_key in a profile (${this.config.configFile})`,
        EXIT.AUTH,
      );
    }
    return { tenantKey: this.config.tenantKey };
  }

  /** Every request: a timeout, Ctrl-C, and with --verbose one line each way on stderr (no headers). */
  private async send(request: Request): Promise<Response> {
    request.headers.set('user-agent', USER_AGENT);
    const signal = AbortSignal.any([
      this.io.signal,
      AbortSignal.timeout(this.options.timeout * 1000),
    ]);
    const started = performance.now();
    if (this.options.verbose) this.error(`> ${request.method} ${request.url}`);
    const response = await (this.io.fetch ?? fetch)(request, { signal });
    if (this.options.verbose) {
      const ms = Math.round(performance.now() - started);
      this.error(
        `< ${response.status} in ${ms} ms (request ${response.headers.get('x-request-id') ?? '?'})`,
      );
    }
    return response;
  }

  /** A line on stdout, with any configured key masked. */
  print(line = ''): void {
    this.io.stdout(`${this.redact(line)}\n`);
  }

  /** A line on stderr, with any configured key masked. */
  error(line: string): void {
    this.io.stderr(`${this.redact(line)}\n`);
  }

  /** A command's answer: its JSON body (--json), one field of it (--field), or its lines. */
  emit(output: Output): void {
    if (this.options.field !== undefined) {
      const value = fieldOf(output.json, this.options.field);
      if (value === undefined) {
        throw new CliError(`the answer has no field ${this.options.field}`, EXIT.USAGE);
      }
      this.print(typeof value === 'string' ? value : JSON.stringify(value));
    } else if (this.options.json) {
      this.print(JSON.stringify(output.json, null, 2));
    } else {
      for (const line of output.human) this.print(line);
    }
  }

  /** Streamed answers (`watch`, bulk rows): one compact JSON document per line with --json. */
  emitLine(output: Output): void {
    if (this.options.json || this.options.field !== undefined) {
      const value =
        this.options.field === undefined ? output.json : fieldOf(output.json, this.options.field);
      this.print(typeof value === 'string' ? value : JSON.stringify(value));
    } else {
      for (const line of output.human) this.print(line);
    }
  }

  /** `text` without the configured keys (a key created by `keys create` is not configured). */
  redact(text: string): string {
    let safe = text;
    for (const secret of [this.config.adminKey, this.config.tenantKey]) {
      if (secret) safe = safe.replaceAll(secret, mask(secret));
    }
    return safe;
  }

  /** Waits `ms`, or less when Ctrl-C comes first. */
  sleep(ms: number): Promise<void> {
    const signal = this.io.signal;
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
