import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as z from 'zod';
import type { TestClock } from './clock.js';
import type { Json } from './http.js';

/**
 * The wire behaviour of the Cycles TypeScript SDK's guarded call (`withCycles`), written from
 * its source, not copied: runcycles/cycles-client-typescript 0.4.3 (commit 39212a2), files
 * src/lifecycle.ts (`AsyncCyclesLifecycle.execute`, `_startHeartbeat`,
 * `createReservationWithRecovery`, `isSchemaValidCreateResponse`, `isSchemaValidExtendResponse`,
 * the body builders), src/client.ts (`_post`: headers, one timeout per attempt), src/config.ts
 * (timeout defaults), src/constants.ts (paths, header names) and src/settlement.ts
 * (`isSchemaValidCommitSuccess`). The heartbeat follows the normative PRIMARY ALGORITHM of
 * cycles-protocol-v0 (ReservationExtendResponse, HEARTBEAT GUIDANCE), as the SDK does.
 *
 * The package cannot be installed here, so this is what the SDK's tests would see on the wire:
 * reserve, a heartbeat scheduled from `remaining_ttl_ms`, the guarded function, commit (release
 * when it throws). Left out, because these tests never reach them: the SDK's fieldless fallback
 * beyond its immediate first beat (grant measurement, skip and lead-clamp heuristics, reduced
 * here to a fixed min(ttl/2, 30 s) cadence), dry runs, the commit retry engine and journal (a
 * commit that fails or answers outside the schema is an error here), and the events fallback.
 */

// What the SDK accepts as a success, closed as its validators are: a field it does not know
// makes the answer "ambiguous", which it retries (create) or refuses to schedule from (extend).
const NonNegative = z.number().int().nonnegative();
const Unit = z.enum(['USD_MICROCENTS', 'TOKENS', 'CREDITS', 'RISK_POINTS']);
const Amount = z.strictObject({ unit: Unit, amount: NonNegative });
const Balance = z.strictObject({
  scope: z.string(),
  scope_path: z.string(),
  remaining: z.strictObject({ unit: Unit, amount: z.number().int() }),
  reserved: Amount.optional(),
  spent: Amount.optional(),
  allocated: Amount.optional(),
  debt: Amount.optional(),
  overdraft_limit: Amount.optional(),
  is_over_limit: z.boolean().optional(),
});
const Tools = z.array(z.string().refine((s) => Array.from(s).length <= 256, 'over 256 characters'));
const Caps = z.strictObject({
  max_tokens: NonNegative.optional(),
  max_steps_remaining: NonNegative.optional(),
  tool_allowlist: Tools.optional(),
  tool_denylist: Tools.optional(),
  cooldown_ms: NonNegative.optional(),
});
const EvidenceRef = z.strictObject({
  evidence_id: z.string().regex(/^[0-9a-f]{64}$/),
  cycles_evidence_url: z.url(),
});
export const SdkCreateResponse = z.strictObject({
  decision: z.enum(['ALLOW', 'ALLOW_WITH_CAPS', 'DENY']),
  reservation_id: z.string().optional(),
  affected_scopes: z.array(z.string()),
  expires_at_ms: NonNegative.optional(),
  remaining_ttl_ms: NonNegative.optional(),
  scope_path: z.string().optional(),
  reserved: Amount.optional(),
  caps: Caps.optional(),
  reason_code: z
    .string()
    .refine((s) => Array.from(s).length <= 128)
    .optional(),
  retry_after_ms: NonNegative.optional(),
  balances: z.array(Balance).optional(),
  cycles_evidence: EvidenceRef.optional(),
});
export const SdkExtendResponse = z.strictObject({
  status: z.literal('ACTIVE'),
  expires_at_ms: NonNegative,
  remaining_ttl_ms: NonNegative.optional(),
  balances: z.array(Balance).optional(),
});
export const SdkCommitResponse = z.strictObject({
  status: z.literal('COMMITTED'),
  charged: Amount,
  released: Amount.optional(),
  balances: z.array(Balance).optional(),
  cycles_evidence: EvidenceRef.optional(),
});
export type SdkCreateResponse = z.infer<typeof SdkCreateResponse>;

/** The client's time: monotonic milliseconds and timers. */
export interface ClientClock {
  now(): number;
  /** Runs `task` after `ms`; returns a function that cancels it. */
  schedule(task: () => Promise<void>, ms: number): () => void;
}

export const realClock: ClientClock = {
  now: () => performance.now(),
  schedule(task, ms) {
    const timer = setTimeout(() => void task(), ms);
    return () => clearTimeout(timer);
  },
};

export interface VirtualClock extends ClientClock {
  /**
   * Moves time forward by `ms`, running each task that falls due on the way to its end (an
   * extend included) before going on. `server`'s time moves along, so both sides agree.
   */
  advance(ms: number): Promise<void>;
}

/** Client time that moves only when a test moves it: no real waits, and rtt is 0. */
export function virtualClock(server?: TestClock): VirtualClock {
  let time = 0;
  let seq = 0;
  const due: { at: number; seq: number; task: () => Promise<void> }[] = [];
  const moveTo = (to: number) => {
    server?.advance(to - time);
    time = to;
  };
  return {
    now: () => time,
    schedule(task, ms) {
      const entry = { at: time + Math.max(0, ms), seq: seq++, task };
      due.push(entry);
      return () => {
        if (due.includes(entry)) due.splice(due.indexOf(entry), 1);
      };
    },
    async advance(ms) {
      const target = time + ms;
      for (;;) {
        const next = due
          .filter((e) => e.at <= target)
          .sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
        if (!next) break;
        due.splice(due.indexOf(next), 1);
        moveTo(next.at);
        await next.task();
      }
      moveTo(target);
    },
  };
}

export interface SdkWireConfig {
  readonly baseUrl: string;
  readonly apiKey: string;
  /** The SDK config's default subject tenant. */
  readonly tenant?: string;
  /** The SDK's defaults: 2000 and 5000 ms. Their sum bounds one attempt (AbortSignal.timeout). */
  readonly connectTimeoutMs?: number;
  readonly readTimeoutMs?: number;
  readonly clock?: ClientClock;
}

/** `withCycles` options, as far as these tests use them. */
export interface GuardOptions {
  readonly estimate: number;
  /** Absent: the estimate is committed, marked `metadata.actual_source: "estimate"`. */
  readonly actual?: number;
  readonly unit?: string;
  /** @default 60000 (the SDK's DEFAULT_TTL_MS) */
  readonly ttlMs?: number;
  readonly actionKind?: string;
  readonly actionName?: string;
  /** Subject fields besides the config's tenant (workspace, app, …). */
  readonly subject?: Readonly<Record<string, string>>;
}

/** What the guarded function sees (the SDK's CyclesContext, in part). */
export interface GuardContext {
  readonly reservationId: string;
  readonly decision: SdkCreateResponse['decision'];
  readonly caps?: SdkCreateResponse['caps'];
  readonly expiresAtMs?: number;
  readonly affectedScopes: readonly string[];
}

interface Answer {
  readonly status: number;
  readonly body: unknown;
  readonly headers: Headers;
}

export class SdkWireError extends Error {
  constructor(
    message: string,
    readonly answer?: Answer,
  ) {
    super(answer ? `${message}: ${answer.status} ${JSON.stringify(answer.body)}` : message);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The SDK's guarded call, on the wire. One client per test: `warnings` collects its notices. */
export class SdkWireClient {
  /** What the SDK would console.warn: heartbeat stops and ambiguous answers. */
  readonly warnings: string[] = [];
  private readonly clock: ClientClock;
  private readonly attemptTimeoutMs: number;

  constructor(private readonly config: SdkWireConfig) {
    this.clock = config.clock ?? realClock;
    this.attemptTimeoutMs = (config.connectTimeoutMs ?? 2_000) + (config.readTimeoutMs ?? 5_000);
  }

  /** reserve → heartbeat → fn → commit, or release when fn throws (`AsyncCyclesLifecycle`). */
  async guarded<T>(options: GuardOptions, fn: (ctx: GuardContext) => Promise<T>): Promise<T> {
    const ttlMs = options.ttlMs ?? 60_000;
    const unit = options.unit ?? 'USD_MICROCENTS';
    const created = await this.createWithRecovery({
      idempotency_key: randomUUID(),
      subject: { ...(this.config.tenant && { tenant: this.config.tenant }), ...options.subject },
      action: { kind: options.actionKind ?? 'unknown', name: options.actionName ?? 'unknown' },
      estimate: { unit, amount: options.estimate },
      ttl_ms: ttlMs,
      overage_policy: 'ALLOW_IF_AVAILABLE',
    });
    return this.lifecycle(created, options, fn);
  }

  /**
   * The same lifecycle (heartbeat → fn → commit or release) on a reservation created elsewhere:
   * a delegation's answer (docs/decisions.md § Delegations) has a reserve's shape, so the SDK
   * drives the child by its id exactly as one it reserved itself.
   */
  async adopt<T>(
    answer: unknown,
    options: GuardOptions,
    fn: (ctx: GuardContext) => Promise<T>,
  ): Promise<T> {
    const parsed = SdkCreateResponse.safeParse(answer);
    if (!parsed.success) throw new SdkWireError('not a schema-valid create answer');
    return this.lifecycle(
      { body: parsed.data, rttMs: 0, receivedAt: this.clock.now() },
      options,
      fn,
    );
  }

  private async lifecycle<T>(
    created: { body: SdkCreateResponse; rttMs: number; receivedAt: number },
    options: GuardOptions,
    fn: (ctx: GuardContext) => Promise<T>,
  ): Promise<T> {
    const ttlMs = options.ttlMs ?? 60_000;
    const unit = options.unit ?? 'USD_MICROCENTS';
    const { body } = created;
    if (body.decision === 'DENY') throw new SdkWireError(`reservation denied: ${body.reason_code}`);
    if (!body.reservation_id) throw new SdkWireError('reservation_id missing');
    const id = body.reservation_id;
    const ctx: GuardContext = {
      reservationId: id,
      decision: body.decision,
      affectedScopes: body.affected_scopes,
      ...(body.caps && { caps: body.caps }),
      ...(body.expires_at_ms !== undefined && { expiresAtMs: body.expires_at_ms }),
    };
    const heartbeat = this.startHeartbeat(id, ttlMs, created);
    const startedAt = this.clock.now();
    let completed = false;
    try {
      const result = await fn(ctx);
      completed = true;
      const commit = await this.post(`/v1/reservations/${id}/commit`, {
        idempotency_key: randomUUID(),
        actual: { unit, amount: options.actual ?? options.estimate },
        metrics: { latency_ms: Math.round(this.clock.now() - startedAt) },
        ...(options.actual === undefined && { metadata: { actual_source: 'estimate' } }),
      });
      if (commit.status !== 200 || !SdkCommitResponse.safeParse(commit.body).success) {
        throw new SdkWireError('commit is not a schema-valid success', commit);
      }
      return result;
    } catch (error) {
      if (!completed) {
        const release = { idempotency_key: randomUUID(), reason: 'guarded_method_failed' };
        await this.post(`/v1/reservations/${id}/release`, release).catch(() => undefined);
      }
      throw error;
    } finally {
      heartbeat.stop();
    }
  }

  /** One immediate same-key retry after a transport error, a 5xx or an ambiguous 2xx. */
  private async createWithRecovery(body: Json) {
    for (let attempt = 0; ; attempt++) {
      const sentAt = this.clock.now();
      let answer: Answer;
      try {
        answer = await this.post('/v1/reservations', body);
      } catch (error) {
        if (attempt === 0) continue;
        throw error;
      }
      const receivedAt = this.clock.now();
      const parsed = answer.status === 200 ? SdkCreateResponse.safeParse(answer.body) : undefined;
      if (parsed?.success) return { body: parsed.data, rttMs: receivedAt - sentAt, receivedAt };
      const ambiguous = answer.status >= 500 || (answer.status >= 200 && answer.status < 300);
      if (attempt === 0 && ambiguous) {
        this.warnings.push(`create answered ${answer.status} outside the schema: retrying`);
        continue;
      }
      throw new SdkWireError('create failed', answer);
    }
  }

  /**
   * PRIMARY: every schema-valid create or extend answer carrying remaining_ttl_ms sets the next
   * beat at max(0, lead_floor − retry_reserve), lead_floor = remaining_ttl_ms − rtt (− time since
   * receipt), retry_reserve = 2 × attempt_budget + safety_margin. Without the field: the first
   * beat at once (the SDK's fallback), then every min(ttl/2, 30 s).
   */
  private startHeartbeat(
    id: string,
    ttlMs: number,
    created: { body: SdkCreateResponse; rttMs: number; receivedAt: number },
  ) {
    const clock = this.clock;
    let stopped = false;
    let cancel = () => {};
    let maxRttMs = Math.max(0, created.rttMs);
    const attemptBudget = () => Math.ceil(Math.max(this.attemptTimeoutMs, 1_000, 2 * maxRttMs));
    const safetyMargin = () => Math.ceil(Math.max(1_000, 2 * maxRttMs));
    const retryReserve = () => 2 * attemptBudget() + safetyMargin();
    const fallbackCadenceMs = Math.min(ttlMs / 2, 30_000);
    let lead = { floorMs: 0, at: clock.now() };
    let zeroDelays = 0;
    let zeroWindowRetried = false;
    let pendingKey: string | undefined;

    const stop = (reason: string): undefined => {
      stopped = true;
      this.warnings.push(`heartbeat stopped: ${reason}`);
      return undefined;
    };
    const schedule = (delayMs: number) => {
      if (!stopped) cancel = clock.schedule(beat, delayMs);
    };
    /** The next delay from a schema-valid answer; undefined once two in a row are zero. */
    const fromRemaining = (remainingMs: number, rttMs: number) => {
      lead = { floorMs: Math.max(0, Math.floor(remainingMs - rttMs)), at: clock.now() };
      const next = Math.max(0, Math.floor(lead.floorMs - retryReserve()));
      if (next > 0) zeroDelays = 0;
      else if (zeroDelays++ > 0) return stop('lease shorter than the retry-safety budget');
      return next;
    };
    /** After a transient failure: retry with the same key while one more attempt still fits. */
    const recovery = () => {
      const current = Math.max(0, Math.floor(lead.floorMs - (clock.now() - lead.at)));
      const window = current - attemptBudget() - safetyMargin();
      if (window < 0 || (window === 0 && zeroWindowRetried)) return stop('no time left to retry');
      if (window === 0) zeroWindowRetried = true;
      return Math.max(0, Math.floor(Math.min(30_000, current / 4, window)));
    };

    const beat = async (): Promise<void> => {
      if (stopped) return;
      pendingKey ??= randomUUID();
      const sentAt = clock.now();
      let next: number | undefined;
      try {
        const answer = await this.post(`/v1/reservations/${id}/extend`, {
          idempotency_key: pendingKey,
          extend_by_ms: ttlMs,
        });
        const rttMs = clock.now() - sentAt;
        const parsed = answer.status === 200 ? SdkExtendResponse.safeParse(answer.body) : undefined;
        if (parsed?.success) {
          pendingKey = undefined;
          zeroWindowRetried = false;
          maxRttMs = Math.max(maxRttMs, rttMs);
          const remaining = parsed.data.remaining_ttl_ms;
          next = remaining === undefined ? fallbackCadenceMs : fromRemaining(remaining, rttMs);
        } else if (answer.status < 300 || answer.status >= 500) {
          next = recovery(); // ambiguous 2xx or server error: same key
        } else {
          // 410 / RESERVATION_FINALIZED / NOT_FOUND and any other 4xx: no retry can help.
          const code = isObject(answer.body) ? String(answer.body.error) : '';
          stop(`extend refused with ${answer.status} ${code}`);
        }
      } catch {
        next = recovery();
      }
      if (next !== undefined) schedule(next);
    };

    const remaining = created.body.remaining_ttl_ms;
    if (remaining === undefined) schedule(0);
    else {
      const sinceReceipt = clock.now() - created.receivedAt;
      schedule(fromRemaining(remaining, created.rttMs + sinceReceipt) ?? 0);
    }
    return {
      stop: () => {
        stopped = true;
        cancel();
      },
    };
  }

  /** The SDK's `_post`: its headers, and one bound on the whole attempt. */
  private async post(path: string, body: Json): Promise<Answer> {
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      'X-Cycles-API-Key': this.config.apiKey,
    };
    if (typeof body.idempotency_key === 'string') {
      headers['X-Idempotency-Key'] = body.idempotency_key;
    }
    const res = await fetch(`${this.config.baseUrl}${path}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(this.attemptTimeoutMs),
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: res.status, body: parsed, headers: res.headers };
  }
}

/** One request as it crossed the wire, and its answer. */
export interface Exchange {
  readonly method: string;
  /** The path and query. */
  readonly path: string;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Json | undefined;
  readonly status: number;
  /** The answer as the client received it (after `dropFields`). */
  readonly answer: Json | undefined;
}

export interface RecordingProxy {
  readonly url: string;
  readonly exchanges: readonly Exchange[];
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set(['host', 'connection', 'content-length', 'transfer-encoding']);

async function readAll(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const jsonOrUndefined = (text: string): Json | undefined => {
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
};

/**
 * An HTTP proxy on a port of its own in front of `target`, recording every exchange. With
 * `dropFields`, those top-level fields are removed from JSON answers (a server without them).
 */
export async function recordingProxy(
  target: string,
  options: { readonly dropFields?: readonly string[] } = {},
): Promise<RecordingProxy> {
  const exchanges: Exchange[] = [];
  const server = createServer((req, res) => {
    void (async () => {
      const text = await readAll(req);
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (typeof value === 'string' && !HOP_BY_HOP.has(name)) headers[name] = value;
      }
      const upstream = await fetch(`${target}${req.url ?? '/'}`, {
        method: req.method ?? 'GET',
        headers,
        ...(text && { body: text }),
      });
      const drop = new Set(options.dropFields);
      const received = await upstream.text();
      const parsed = jsonOrUndefined(received);
      const answer =
        parsed && drop.size > 0
          ? Object.fromEntries(Object.entries(parsed).filter(([k]) => !drop.has(k)))
          : parsed;
      const answerText = answer === parsed ? received : JSON.stringify(answer);
      exchanges.push({
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        headers,
        body: text ? jsonOrUndefined(text) : undefined,
        status: upstream.status,
        answer,
      });
      const out: Record<string, string> = {};
      upstream.headers.forEach((value, name) => {
        if (!HOP_BY_HOP.has(name) && name !== 'content-encoding') out[name] = value;
      });
      res.writeHead(upstream.status, out).end(answerText);
    })().catch((error: unknown) => {
      res.writeHead(502, { 'content-type': 'text/plain' }).end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    exchanges,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
