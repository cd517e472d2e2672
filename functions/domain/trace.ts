/**
 * W3C Trace Context for every request (the reference runtime document's CORRELATION AND
 * TRACING, normative cross-plane): the trace id comes from a valid `traceparent`, else from a
 * valid `X-Cycles-Trace-Id`, else is generated; a malformed header counts as absent and is never
 * a reason to refuse a request. The id is echoed on every response and stamped on the audit
 * records, events and webhook deliveries the request causes.
 */
export interface Trace {
  /** 32 lowercase hex, never all zeros. */
  readonly traceId: string;
  /** The inbound `traceparent`'s sampling byte, kept for outbound deliveries; else `01`. */
  readonly flags: string;
  /** The request carried a valid `traceparent` (its flags are then preserved downstream). */
  readonly fromTraceparent: boolean;
}

const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;
const FLAGS = /^[0-9a-f]{2}$/;
const allZeros = (hex: string) => /^0+$/.test(hex);

export const isTraceId = (value: string): boolean => TRACE_ID.test(value) && !allZeros(value);

/** The trace id and flags of a valid version-00 `traceparent`, else undefined. */
export function parseTraceparent(
  header: string | undefined,
): { traceId: string; flags: string } | undefined {
  const parts = header?.trim().split('-');
  if (parts?.length !== 4) return undefined;
  const [version, traceId = '', spanId = '', flags = ''] = parts;
  if (version !== '00' || !isTraceId(traceId)) return undefined;
  if (!SPAN_ID.test(spanId) || allZeros(spanId) || !FLAGS.test(flags)) return undefined;
  return { traceId, flags };
}

/**
 * The request's trace: `traceparent` wins over `X-Cycles-Trace-Id` when both are valid (they
 * may disagree); `fresh` makes a new id (16 random bytes as hex) when neither is.
 */
export function traceOf(
  traceparent: string | undefined,
  cyclesTraceId: string | undefined,
  fresh: () => string,
): Trace {
  const parsed = parseTraceparent(traceparent);
  if (parsed) return { ...parsed, fromTraceparent: true };
  const given = cyclesTraceId?.trim();
  if (given !== undefined && isTraceId(given)) {
    return { traceId: given, flags: '01', fromTraceparent: false };
  }
  let traceId = fresh();
  while (!isTraceId(traceId)) traceId = fresh();
  return { traceId, flags: '01', fromTraceparent: false };
}

/** A version-00 `traceparent` of the trace with a span id of the caller's (fresh per hop). */
export const traceparentOf = (trace: Pick<Trace, 'traceId' | 'flags'>, spanId: string): string =>
  `00-${trace.traceId}-${spanId}-${trace.flags}`;
