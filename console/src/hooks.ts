import { type Inputs, useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface Loaded<T> {
  readonly data?: T | undefined;
  readonly error?: Error | undefined;
  readonly loading: boolean;
  readonly reload: () => void;
}

/**
 * Runs `load` when `inputs` change (and on reload()), keeping the last data while a new load
 * runs. An answer that arrives after a newer load started is dropped.
 */
export function useLoad<T>(load: () => Promise<T>, inputs: Inputs): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean }>({
    loading: true,
  });
  const [version, setVersion] = useState(0);
  const latest = useRef(0);
  useEffect(() => {
    const run = ++latest.current;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => {
        if (run === latest.current) setState({ data, loading: false });
      },
      (error: unknown) => {
        if (run === latest.current)
          setState((s) => ({
            ...s,
            error: error instanceof Error ? error : new Error(String(error)),
            loading: false,
          }));
      },
    );
  }, [...inputs, version]);
  const reload = useCallback(() => setVersion((v) => v + 1), []);
  return { ...state, reload };
}

/** The current time, refreshed every `intervalMs` while the component is shown. */
export function useNow(intervalMs: number): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(timer);
  }, [intervalMs]);
  return now;
}

/** Runs an action once at a time, keeping its error for the form that started it. */
export function useAction<A extends unknown[]>(
  action: (...args: A) => Promise<void>,
): { readonly run: (...args: A) => Promise<void>; readonly busy: boolean; readonly error?: Error } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();
  const run = async (...args: A) => {
    if (busy) return;
    setBusy(true);
    setError(undefined);
    try {
      await action(...args);
    } catch (e) {
      setError(e instanceof Error ? e : new Error(String(e)));
    } finally {
      setBusy(false);
    }
  };
  return { run, busy, ...(error && { error }) };
}

export interface Paged<T> {
  readonly items: readonly T[];
  readonly hasMore: boolean;
  readonly loading: boolean;
  readonly error?: Error | undefined;
  readonly more: () => void;
  readonly reload: () => void;
}

/**
 * A cursor-paged listing: the first page when `inputs` change (or on reload()), the next one
 * appended on more(). Pages of an older listing that arrive late are dropped.
 */
export function usePaged<T>(
  fetchPage: (
    cursor: string | undefined,
  ) => Promise<{ items: readonly T[]; cursor?: string | undefined }>,
  inputs: Inputs,
  enabled = true,
): Paged<T> {
  const [state, setState] = useState<{
    items: readonly T[];
    cursor?: string | undefined;
    loading: boolean;
    error?: Error;
  }>({ items: [], loading: enabled });
  const [version, setVersion] = useState(0);
  const generation = useRef(0);

  const load = (cursor: string | undefined, append: boolean) => {
    const run = generation.current;
    setState((s) => ({ ...s, loading: true, error: undefined }));
    fetchPage(cursor).then(
      (page) => {
        if (run !== generation.current) return;
        setState((s) => ({
          items: append ? [...s.items, ...page.items] : page.items,
          cursor: page.cursor,
          loading: false,
        }));
      },
      (error: unknown) => {
        if (run !== generation.current) return;
        setState((s) => ({
          ...s,
          loading: false,
          error: error instanceof Error ? error : new Error(String(error)),
        }));
      },
    );
  };
  useEffect(() => {
    generation.current++;
    if (!enabled) {
      setState({ items: [], loading: false });
      return;
    }
    load(undefined, false);
  }, [...inputs, version, enabled]);

  return {
    items: state.items,
    hasMore: state.cursor !== undefined,
    loading: state.loading,
    ...(state.error && { error: state.error }),
    more: () => load(state.cursor, true),
    reload: () => setVersion((v) => v + 1),
  };
}
