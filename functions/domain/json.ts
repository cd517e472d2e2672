import { isSafeNumber, LosslessNumber, parse, stringify } from 'lossless-json';
import { invalidRequest } from './errors.js';

/**
 * JSON that round-trips exactly. Clients put anything JSON allows in `metadata` and
 * `metrics.custom` — a 64-bit trace id such as 18446744073709551616, 1e-200, keys "" and
 * "__proto__" — and get it back digit for digit: numbers a double cannot hold stay
 * LosslessNumbers (their source text), and such values are stored as JSON text, never as
 * DynamoDB numbers or maps (which refuse them).
 */

/** How deep a request body may nest (the body object is level 1). */
export const MAX_JSON_DEPTH = 32;

const parseNumber = (text: string) =>
  isSafeNumber(text) ? Number(text) : new LosslessNumber(text);

/** Parses JSON text exactly; undefined when it is not JSON. Never recurses past MAX_JSON_DEPTH. */
export function parseExactJson(text: string): { value: unknown } | undefined {
  const deep = tooDeepAt(text, MAX_JSON_DEPTH);
  if (deep !== undefined) {
    throw invalidRequest(`${deep}: nests deeper than ${MAX_JSON_DEPTH} levels`, {
      field: deep,
      max_depth: MAX_JSON_DEPTH,
    });
  }
  try {
    return { value: parse(text, null, parseNumber) };
  } catch {
    return undefined;
  }
}

/**
 * Serializes as JSON.stringify does, writing LosslessNumbers (and bigints) as their exact text.
 * Most bodies hold neither, and the engine's own JSON.stringify writes them at a fraction of
 * lossless-json's CPU (BENCHMARKS.md § Server CPU profile).
 */
export const exactJson = (value: unknown): string =>
  (needsExactText(value) ? stringify(value) : JSON.stringify(value)) ?? 'null';

/** Whether a value holds a number JSON.stringify would not write exactly (or at all). */
function needsExactText(value: unknown): boolean {
  if (typeof value === 'bigint') return true;
  if (value === null || typeof value !== 'object') return false;
  // A toJSON may answer anything: the exact writer follows it.
  if (value instanceof LosslessNumber || typeof (value as Json).toJSON === 'function') return true;
  if (Array.isArray(value)) return value.some(needsExactText);
  for (const key in value) if (needsExactText((value as Json)[key])) return true;
  return false;
}

type Json = Record<string, unknown>;

export const isExactNumber = (v: unknown): v is LosslessNumber => v instanceof LosslessNumber;

/**
 * The path of the first container nested deeper than `max`, from a scan of the raw text (no
 * recursion, so any input is safe); undefined when none is.
 */
export function tooDeepAt(text: string, max: number): string | undefined {
  const path: (string | number)[] = [];
  const arrays: boolean[] = [];
  let lastString = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      lastString = text.slice(i + 1, j);
      i = j;
    } else if (c === '{' || c === '[') {
      if (arrays.length >= max) return path.join('.') || '(root)';
      arrays.push(c === '[');
      path.push(c === '[' ? 0 : '');
    } else if (c === '}' || c === ']') {
      arrays.pop();
      path.pop();
    } else if (c === ':' && path.length > 0) {
      path[path.length - 1] = lastString;
    } else if (c === ',' && arrays[arrays.length - 1]) {
      path[path.length - 1] = Number(path[path.length - 1]) + 1;
    }
  }
  return undefined;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * The path of the first key or string that is not well-formed Unicode (a lone UTF-16
 * surrogate, which JSON's \u escapes can carry), or undefined. Walks without recursion.
 */
export function illFormedStringAt(value: unknown): string | undefined {
  const stack: { path: string; value: unknown }[] = [{ path: '', value }];
  for (let next = stack.pop(); next; next = stack.pop()) {
    const { path, value: v } = next;
    if (typeof v === 'string') {
      if (LONE_SURROGATE.test(v)) return path || '(root)';
    } else if (v !== null && typeof v === 'object' && !isExactNumber(v)) {
      for (const [key, child] of Object.entries(v)) {
        const at = path ? `${path}.${key}` : key;
        if (LONE_SURROGATE.test(key)) return at;
        stack.push({ path: at, value: child });
      }
    }
  }
  return undefined;
}
