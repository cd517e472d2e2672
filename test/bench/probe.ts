/**
 * Preloaded into the server process the bench starts (`node --import tsx --import
 * ./test/bench/probe.ts infra/local/main.ts`): counts the service's own DynamoDB requests with
 * a middleware on its one client, and answers the bench over the IPC channel. It changes
 * nothing else: main.ts then starts exactly what `npm start` starts.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { dynamoClient } from '../../functions/store/client.js';
import { transactStats } from '../../functions/store/transact.js';
import { currentInvocation } from '../../functions/telemetry/invocation.js';
import { admissionStats } from '../../infra/local/admission.js';
import {
  type ContentionCounters,
  installedContentionEmulator,
} from '../../infra/local/contention.js';
import { installTally, type Tally } from './tally.js';

export interface ProbeRequest {
  readonly id: number;
  readonly command: 'snapshot' | 'profile-start' | 'profile-stop' | 'sizing-on' | 'sizing-off';
  readonly path?: string;
}

export interface ProbeSnapshot {
  readonly tally: Tally;
  readonly conflictRetries: number;
  /** Writes turned away busy after their conflict retries (429 CONTENTION / THROTTLED). */
  readonly busyAnswers?: number | undefined;
  /** The local servers' admission counters, when they keep them. */
  readonly admission?: unknown;
  /** The contention emulator's counters, when the server runs with EMULATE_CONTENTION. */
  readonly contention?: ContentionCounters | undefined;
  /** The emulator's conflicts by item met held. */
  readonly conflictsByItem?: Record<string, number> | undefined;
  readonly rssBytes: number;
  readonly maxRssKb: number;
  /** DynamoDB calls made while serving a request (what its log line's dynamodb_calls counts). */
  readonly requestCalls: number;
}

const tally: Tally = {};
const control = { sizing: true };
installTally(dynamoClient, tally, control);
// Calls inside an HTTP request's telemetry scope (it has a trace; the background jobs' have none).
let requestCalls = 0;
dynamoClient.middlewareStack.add(
  (next) => (args) => {
    if (currentInvocation()?.trace) requestCalls++;
    return next(args);
  },
  { step: 'initialize', name: 'benchRequestCalls' },
);

let session: Session | undefined;

async function answer(request: ProbeRequest): Promise<unknown> {
  switch (request.command) {
    case 'snapshot':
      return {
        tally: structuredClone(tally),
        conflictRetries: transactStats.conflictRetries,
        busyAnswers: transactStats.busyAnswers,
        admission: admissionStats(),
        contention: structuredClone(installedContentionEmulator()?.counters),
        conflictsByItem: structuredClone(installedContentionEmulator()?.model.conflictsByItem),
        rssBytes: process.memoryUsage.rss(),
        maxRssKb: process.resourceUsage().maxRSS,
        requestCalls,
      } satisfies ProbeSnapshot;
    case 'sizing-on':
    case 'sizing-off':
      control.sizing = request.command === 'sizing-on';
      return {};
    case 'profile-start':
      session = new Session();
      session.connect();
      await session.post('Profiler.enable');
      // The default 1 ms interval: finer sampling would slow the server it measures.
      await session.post('Profiler.setSamplingInterval', { interval: 1_000 });
      await session.post('Profiler.start');
      return {};
    case 'profile-stop': {
      if (!session) throw new Error('no profile running');
      const { profile } = await session.post('Profiler.stop');
      session.disconnect();
      session = undefined;
      if (request.path) writeFileSync(request.path, JSON.stringify(profile));
      return { path: request.path };
    }
  }
}

process.on('message', (message: ProbeRequest) => {
  answer(message).then(
    (result) => process.send?.({ id: message.id, result }),
    (error: unknown) => process.send?.({ id: message.id, error: String(error) }),
  );
});
// The bench is gone (finished or killed): never leave a server behind.
process.on('disconnect', () => process.exit(0));
