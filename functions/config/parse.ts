/**
 * Parsers of environment variables: each turns a variable's text (undefined when unset or empty)
 * into its typed value, or throws `invalid configuration: NAME: why` so a bad deployment fails
 * at cold start, not on the first request that reads the setting.
 */
export type Setting<T> = (raw: string | undefined, name: string) => T;

const invalid = (name: string, why: string) => new Error(`invalid configuration: ${name}: ${why}`);

export const text =
  (fallback: string, { min = 0, max = Number.POSITIVE_INFINITY } = {}): Setting<string> =>
  (raw, name) => {
    const value = raw ?? fallback;
    if (value.length < min || value.length > max) {
      throw invalid(name, `must be ${min} to ${max} characters`);
    }
    return value;
  };

export const optionalText = (): Setting<string | undefined> => (raw) => raw;

/** An integer within [min, max]. */
export const int =
  (fallback: number, min: number, max: number): Setting<number> =>
  (raw, name) => {
    if (raw === undefined) return fallback;
    const value = Number(raw.trim());
    if (!/^-?\d+$/.test(raw.trim()) || value < min || value > max) {
      throw invalid(name, `must be an integer from ${min} to ${max}, not "${raw}"`);
    }
    return value;
  };

export const oneOf =
  <const T extends string>(values: readonly T[], fallback: NoInfer<T>): Setting<T> =>
  (raw, name) => {
    if (raw === undefined) return fallback;
    if (!(values as readonly string[]).includes(raw)) {
      throw invalid(name, `must be one of ${values.join(', ')}, not "${raw}"`);
    }
    return raw as T;
  };

/** true or 1, false or 0. */
export const flag =
  (fallback: boolean): Setting<boolean> =>
  (raw, name) => {
    if (raw === undefined) return fallback;
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
    throw invalid(name, `must be true, false, 1 or 0, not "${raw}"`);
  };

function parseUrl(raw: string, name: string, protocols?: readonly string[]): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid(name, `is not a URL: "${raw}"`);
  }
  if (protocols && !protocols.includes(url.protocol)) {
    throw invalid(name, `must be an ${protocols.join(' or ')} URL: "${raw}"`);
  }
  return raw;
}

export const optionalUrl = (): Setting<string | undefined> => (raw, name) =>
  raw === undefined ? undefined : parseUrl(raw, name);

/** Comma-separated http(s) URLs; blanks between commas are ignored. */
export const urlList = (): Setting<readonly string[]> => (raw, name) =>
  (raw ?? '')
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '')
    .map((u) => parseUrl(u, name, ['http:', 'https:']));
