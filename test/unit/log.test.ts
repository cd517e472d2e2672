import { afterEach, describe, expect, it, vi } from 'vitest';
import { config } from '../../functions/config/settings.js';
import { log } from '../../functions/log.js';

/** What `log` wrote to each stream while `act` ran, one parsed object per line. */
function written(act: () => void): { stdout: unknown[]; stderr: unknown[] } {
  const out = { stdout: [] as unknown[], stderr: [] as unknown[] };
  for (const name of ['stdout', 'stderr'] as const) {
    vi.spyOn(process[name], 'write').mockImplementation((chunk: string | Uint8Array) => {
      for (const line of String(chunk).split('\n').filter(Boolean)) {
        out[name].push(JSON.parse(line));
      }
      return true;
    });
  }
  try {
    act();
  } finally {
    vi.restoreAllMocks();
  }
  return out;
}

const mutable = config as { LOG_LEVEL: string };
const level = config.LOG_LEVEL;

afterEach(() => {
  mutable.LOG_LEVEL = level;
  delete process.env._X_AMZN_TRACE_ID;
  delete process.env.AWS_LAMBDA_LOG_LEVEL;
});

describe('log', () => {
  it('writes one JSON object per line with the keys Logs Insights queries use, then the fields', () => {
    mutable.LOG_LEVEL = 'info';
    process.env._X_AMZN_TRACE_ID =
      'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';

    const { stdout, stderr } = written(() =>
      log.info('request', { request_id: 'r1', status: 200, skipped: undefined, big: 2n ** 64n }),
    );

    expect(stderr).toEqual([]);
    expect(stdout).toEqual([
      {
        level: 'INFO',
        message: 'request',
        timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        service: config.POWERTOOLS_SERVICE_NAME,
        sampling_rate: 0,
        xray_trace_id: '1-5759e988-bd862e3fe1be46a994272793',
        request_id: 'r1',
        status: 200,
        big: '18446744073709551616',
      },
    ]);
  });

  it('writes warn and error to stderr, errors with name, message, stack and cause', () => {
    mutable.LOG_LEVEL = 'info';
    const error = new TypeError('boom', { cause: new Error('underneath') });

    const { stdout, stderr } = written(() => {
      log.warn('busy', { busy_reason: 'CONTENTION' });
      log.error('unhandled', { error });
    });

    expect(stdout).toEqual([]);
    expect(stderr).toEqual([
      expect.objectContaining({ level: 'WARN', message: 'busy', busy_reason: 'CONTENTION' }),
      expect.objectContaining({
        level: 'ERROR',
        error: {
          name: 'TypeError',
          message: 'boom',
          stack: expect.stringContaining('TypeError: boom'),
          cause: { name: 'Error', message: 'underneath', stack: expect.any(String) },
        },
      }),
    ]);
    expect(stderr[0]).not.toHaveProperty('xray_trace_id');
  });

  it('prints nothing below its level, nothing at all when silent, and takes Lambda’s stricter level', () => {
    mutable.LOG_LEVEL = 'info';
    expect(written(() => log.debug('hidden')).stdout).toEqual([]);

    mutable.LOG_LEVEL = 'debug';
    expect(written(() => log.debug('shown')).stdout).toHaveLength(1);

    process.env.AWS_LAMBDA_LOG_LEVEL = 'WARN';
    const quieted = written(() => {
      log.info('hidden');
      log.warn('shown');
    });
    expect([...quieted.stdout, ...quieted.stderr]).toEqual([
      expect.objectContaining({ message: 'shown' }),
    ]);

    mutable.LOG_LEVEL = 'silent';
    const silent = written(() => log.error('hidden'));
    expect([...silent.stdout, ...silent.stderr]).toEqual([]);
  });
});
