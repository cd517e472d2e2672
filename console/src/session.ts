/**
 * The admin key the operator signed in with lives in this tab's sessionStorage only: it
 * survives a reload, never another tab or a closed browser, and never appears in a URL, a log
 * or a cookie. It goes after IDLE_TIMEOUT_MS without a key press, click or scroll; a reload
 * after that long finds it gone too, since the last activity is stored beside it.
 */
export const IDLE_TIMEOUT_MS = 15 * 60_000;

/** What is used of sessionStorage (a Map does for tests). */
export interface Store {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

const KEY = 'budget-console.admin-key';
const LAST_ACTIVITY = 'budget-console.last-activity';

export function signIn(store: Store, key: string, now: number): void {
  store.setItem(KEY, key);
  store.setItem(LAST_ACTIVITY, String(now));
}

export function signOut(store: Store): void {
  store.removeItem(KEY);
  store.removeItem(LAST_ACTIVITY);
}

/** The signed-in key, unless the session has been idle too long (then it is removed). */
export function currentKey(store: Store, now: number): string | undefined {
  const key = store.getItem(KEY) ?? undefined;
  if (key === undefined) return undefined;
  if (isIdle(store, now)) {
    signOut(store);
    return undefined;
  }
  return key;
}

export function isIdle(store: Store, now: number): boolean {
  const last = Number(store.getItem(LAST_ACTIVITY));
  return !Number.isFinite(last) || now - last >= IDLE_TIMEOUT_MS;
}

/** The operator did something: the idle clock starts again. */
export function touch(store: Store, now: number): void {
  if (store.getItem(KEY) !== null) store.setItem(LAST_ACTIVITY, String(now));
}
