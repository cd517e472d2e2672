/**
 * What the edge's rules answer (infra/edge-firewall.ts in AWS, infra/local/waf.ts locally): SPEC's
 * error body. WAF cannot template a request id: it names the edge instead. No CDK import, so the
 * local server loads it cheaply.
 */
const errorBody = (error: string, message: string) =>
  JSON.stringify({ error, message, request_id: 'edge' });

/** A rate rule's window, and so the Retry-After of its 429. */
export const EDGE_WINDOW_S = 60;

export const EDGE_RESPONSES = {
  rateLimited: {
    status: 429,
    body: errorBody('LIMIT_EXCEEDED', `too many requests: retry after ${EDGE_WINDOW_S} s`),
    headers: { 'retry-after': String(EDGE_WINDOW_S) },
  },
  unauthorized: {
    status: 401,
    body: errorBody('UNAUTHORIZED', 'X-Cycles-API-Key is missing or not a valid key'),
    headers: {},
  },
  forbidden: {
    status: 403,
    body: errorBody('FORBIDDEN', 'the admin API does not accept this source address'),
    headers: {},
  },
} as const;
export type EdgeResponse = keyof typeof EDGE_RESPONSES;
