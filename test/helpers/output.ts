import { afterAll, beforeAll, vi } from 'vitest';

export type Line = Record<string, unknown>;

/**
 * Keeps everything the process writes (log lines on stdout and stderr, EMF documents on stdout)
 * instead of printing it, for this test file: the fixtures' own requests would flood the test
 * output. Returns `linesDuring`: the JSON lines written while `act` runs.
 */
export function captureOutput(): (act: () => Promise<unknown>) => Promise<Line[]> {
  const written: string[] = [];
  beforeAll(() => {
    const keep = (chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    };
    vi.spyOn(process.stdout, 'write').mockImplementation(keep);
    vi.spyOn(process.stderr, 'write').mockImplementation(keep);
  });
  afterAll(() => {
    vi.restoreAllMocks();
  });
  return async (act) => {
    const from = written.length;
    await act();
    return written
      .slice(from)
      .join('')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Line);
  };
}
