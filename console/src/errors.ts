import { ApiError } from '../../client/index.js';

/**
 * What went wrong, in the operator's terms: the kind decides the headline and what to do next
 * (correct a field, sign in again, reload, wait, check the connection), the service's own words
 * follow. Every error the console shows goes through `describeError`.
 */
export type ErrorKind =
  | 'input'
  | 'validation'
  | 'auth'
  | 'forbidden'
  | 'notFound'
  | 'conflict'
  | 'busy'
  | 'server'
  | 'network'
  | 'console';

export interface DescribedError {
  readonly kind: ErrorKind;
  /** The headline: what kind of failure, and what to do about it. */
  readonly title: string;
  /** The detail: the service's (or the form's) own message. */
  readonly message: string;
  /** The request field (or form field) at fault, for a validation error. */
  readonly field?: string;
  /** SPEC's error code, when the service answered. */
  readonly code?: string;
  readonly requestId?: string;
}

/** A value the operator typed that the console refuses before sending anything. */
export class InputError extends Error {
  override readonly name = 'InputError';
  constructor(
    message: string,
    /** The form field, as its label reads. */
    readonly field?: string,
  ) {
    super(message);
  }
}

/** The request never got an answer: offline, DNS, the server down, a proxy refusing. */
export class NetworkError extends Error {
  override readonly name = 'NetworkError';
  constructor(cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
  }
}

/** A fetch that turns a request without an answer into a NetworkError (and nothing else). */
export const fetchOrNetworkError = async (request: Request): Promise<Response> => {
  try {
    return await fetch(request);
  } catch (error) {
    throw new NetworkError(error);
  }
};

const TITLES: Readonly<Record<ErrorKind, string>> = {
  input: 'Check the form.',
  validation: 'The service refused the input.',
  auth: 'The admin key was refused: sign in again.',
  forbidden: 'Not allowed.',
  notFound: 'Not found: it may have been removed, or the name is wrong.',
  conflict: 'Refused: it conflicts with the current state.',
  busy: 'The service is busy: try again shortly.',
  server: 'The service failed: try again, or look up the request id in its logs.',
  network: 'Could not reach the service: check the connection and that it runs.',
  console: 'The console failed: reload the page.',
};

export function describeError(error: Error): DescribedError {
  if (error instanceof InputError) {
    const { field } = error;
    return { kind: 'input', title: TITLES.input, message: error.message, ...(field && { field }) };
  }
  if (error instanceof NetworkError) {
    return { kind: 'network', title: TITLES.network, message: error.message };
  }
  if (!(error instanceof ApiError)) {
    return { kind: 'console', title: TITLES.console, message: error.message };
  }
  const kind = apiErrorKind(error);
  const field = kind === 'validation' ? fieldOf(error.details) : undefined;
  const wait = error.retryAfter;
  return {
    kind,
    title:
      kind === 'busy' && wait !== undefined
        ? `The service is busy: try again in ${wait} s.`
        : TITLES[kind],
    message: error.message,
    code: error.code,
    ...(field && { field }),
    ...(error.requestId && { requestId: error.requestId }),
  };
}

function apiErrorKind(error: ApiError): ErrorKind {
  const { status } = error;
  if (status === 400) return 'validation';
  if (status === 401) return 'auth';
  if (status === 403) return 'forbidden';
  if (status === 404) return 'notFound';
  if (status === 409 || status === 410) return 'conflict';
  if (status === 429 || status === 503) return 'busy';
  return 'server';
}

/** The field of a 400: `details.field`, or the first of `details.issues`. */
function fieldOf(details: Readonly<Record<string, unknown>> | undefined): string | undefined {
  if (!details) return undefined;
  if (typeof details.field === 'string') return details.field;
  const [first] = Array.isArray(details.issues) ? details.issues : [];
  const field = (first as { field?: unknown } | undefined)?.field;
  return typeof field === 'string' && field !== '(root)' ? field : undefined;
}
