import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  type Auditor,
  type AuditResult,
  audit,
  finalLedgerCheck,
  type LedgerState,
} from './audit.js';
import type { HttpTarget } from './http.js';
import type { BenchOptions } from './options.js';
import { type BenchTenant, provisionTenant } from './provision.js';
import type { ServerProcess } from './server.js';
import { Outcomes } from './stats.js';
import { CpuMeter, type CpuSplit } from './system.js';
import { diffTally, type Tally } from './tally.js';

type RawEngine = typeof import('./raw.js');

export interface Measured<T> {
  readonly value: T;
  /** The service's DynamoDB requests over the measurement (when the bench started it). */
  readonly service?: Tally | undefined;
  readonly serviceConflictRetries?: number | undefined;
  /** The raw engine's requests over the measurement. */
  readonly raw?: Tally | undefined;
  readonly rawConflictRetries?: number | undefined;
  readonly cpu: CpuSplit;
}

export const say = (line: string) => process.stdout.write(`${line}\n`);

/** Replaces a generated block of BENCHMARKS.md between its markers (appended when absent). */
export function replaceBlock(text: string, begin: string, end: string, block: string): string {
  const generated = `${begin}\n\n${block}\n\n${end}`;
  const from = text.indexOf(begin);
  const to = text.indexOf(end);
  return from >= 0 && to > from
    ? `${text.slice(0, from)}${generated}${text.slice(to + end.length)}`
    : `${text.trimEnd()}\n\n${generated}\n`;
}

export interface BenchParts {
  readonly opts: BenchOptions;
  readonly runtime: HttpTarget;
  readonly admin: HttpTarget;
  readonly adminKey: string;
  readonly runId: string;
  /** The server process, when the bench started it (DynamoDB counts, profiles). */
  readonly server: ServerProcess | undefined;
  readonly serverPid: number | undefined;
  readonly javaPid: number | undefined;
  /** Present when the bench can reach the service's DynamoDB. */
  readonly raw: RawEngine | undefined;
  readonly db: { readonly doc: DynamoDBDocumentClient; readonly table: string } | undefined;
  readonly auditor: Auditor;
}

/** What every phase needs: targets, the raw engine, the auditor, and what was recorded. */
export class Bench {
  readonly audits: AuditResult[] = [];
  readonly tenants: BenchTenant[] = [];
  readonly outcomes = new Map<string, Outcomes>();
  /** Every ledger as its phase's audit read it, for the final check. */
  private readonly audited = new Map<string, readonly LedgerState[]>();

  constructor(readonly parts: BenchParts) {}

  get opts() {
    return this.parts.opts;
  }
  get runtime() {
    return this.parts.runtime;
  }
  get raw() {
    return this.parts.raw;
  }
  get server() {
    return this.parts.server;
  }
  get db() {
    return this.parts.db;
  }

  async tenant(label: string, scopes: readonly string[]): Promise<BenchTenant> {
    const t = await provisionTenant(
      this.parts.admin,
      this.parts.adminKey,
      `b${this.parts.runId}-${label}`,
      label,
      scopes,
    );
    this.tenants.push(t);
    return t;
  }

  /**
   * Capacity sizing in both counting middlewares: on for the single-client phases (which
   * report units), off under load (which reports calls and items, and CPU per operation).
   */
  async sizing(on: boolean): Promise<void> {
    await this.parts.server?.sizing(on);
    if (this.parts.raw) this.parts.raw.rawControl.sizing = on;
  }

  /** Statuses of one phase; every phase's are checked at the end. */
  outcomesOf(phase: string): Outcomes {
    let o = this.outcomes.get(phase);
    if (!o) {
      o = new Outcomes();
      this.outcomes.set(phase, o);
    }
    return o;
  }

  /** Runs `fn` between two snapshots of the DynamoDB counters and of every process's CPU. */
  async measure<T>(fn: () => Promise<T>): Promise<Measured<T>> {
    const before = await this.server?.snapshot();
    const rawBefore = this.raw ? structuredClone(this.raw.rawTally) : undefined;
    const rawRetriesBefore = this.raw?.rawConflictRetries();
    const meter = new CpuMeter(this.parts.serverPid, this.parts.javaPid);
    const value = await fn();
    const cpu = meter.stop();
    const after = await this.server?.snapshot();
    return {
      value,
      service: before && after ? diffTally(after.tally, before.tally) : undefined,
      serviceConflictRetries:
        before && after ? after.conflictRetries - before.conflictRetries : undefined,
      raw: this.raw && rawBefore ? diffTally(this.raw.rawTally, rawBefore) : undefined,
      rawConflictRetries:
        this.raw && rawRetriesBefore !== undefined
          ? this.raw.rawConflictRetries() - rawRetriesBefore
          : undefined,
      cpu,
    };
  }

  async audit(phase: string, tenants: readonly BenchTenant[]): Promise<AuditResult> {
    return this.record(await audit(this.parts.auditor, phase, tenants, this.audited));
  }

  /** Every ledger of the run, re-read at the end: unchanged since its audit, invariant kept. */
  async finalCheck(): Promise<AuditResult> {
    return this.record(await finalLedgerCheck(this.parts.auditor, this.tenants, this.audited));
  }

  private record(result: AuditResult): AuditResult {
    this.audits.push(result);
    say(
      `  audit ${result.phase}: ${result.ledgers} ledgers, ${result.reservations} reservations (${result.active} active), ${result.events} events — ${result.mismatches === 0 ? 'OK' : `${result.mismatches} MISMATCHES`} (${result.ms} ms)`,
    );
    for (const e of result.examples) say(`    ${e}`);
    return result;
  }
}
