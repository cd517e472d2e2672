import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { apiBase, collect, createClient, items, unwrap } from './api.js';
import { Console, type ConsoleContext } from './context.js';
import { useLoad } from './hooks.js';
import { ApiKeys } from './pages/ApiKeys.js';
import { Audit } from './pages/Audit.js';
import { Budgets } from './pages/Budgets.js';
import { Events } from './pages/Events.js';
import { Overview } from './pages/Overview.js';
import { Policies } from './pages/Policies.js';
import { Reservations } from './pages/Reservations.js';
import { SignIn } from './pages/SignIn.js';
import { Tenants } from './pages/Tenants.js';
import { Webhooks } from './pages/Webhooks.js';
import { hrefOf, PAGE_TITLES, PAGES, type PageId, type Params, useLocation } from './router.js';
import { currentKey, IDLE_TIMEOUT_MS, isIdle, signIn, signOut, touch } from './session.js';

const store = () => window.sessionStorage;
const base = apiBase(window.location.pathname);

export function App() {
  const [key, setKey] = useState(() => currentKey(store(), Date.now()));
  const [reason, setReason] = useState<string>();
  const leave = useCallback((why?: string) => {
    signOut(store());
    setKey(undefined);
    setReason(why);
  }, []);

  if (!key) {
    return (
      <SignIn
        base={base}
        reason={reason}
        onSignedIn={(k) => {
          signIn(store(), k, Date.now());
          setReason(undefined);
          setKey(k);
        }}
      />
    );
  }
  return <Shell adminKey={key} onSignOut={leave} />;
}

const ACTIVITY_EVENTS = ['pointerdown', 'keydown', 'wheel', 'touchstart'] as const;

/** Signs out after IDLE_TIMEOUT_MS without a key press, click, scroll or touch. */
function useIdleTimeout(onIdle: () => void): void {
  useEffect(() => {
    const active = () => touch(store(), Date.now());
    const check = () => {
      if (isIdle(store(), Date.now())) onIdle();
    };
    for (const name of ACTIVITY_EVENTS) window.addEventListener(name, active, { passive: true });
    document.addEventListener('visibilitychange', check);
    const timer = setInterval(check, 10_000);
    return () => {
      for (const name of ACTIVITY_EVENTS) window.removeEventListener(name, active);
      document.removeEventListener('visibilitychange', check);
      clearInterval(timer);
    };
  }, [onIdle]);
}

function Shell({
  adminKey,
  onSignOut,
}: {
  readonly adminKey: string;
  readonly onSignOut: (reason?: string) => void;
}) {
  const { page, params } = useLocation();
  const [notice, setNotice] = useState('');
  const noticeTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const client = useMemo(
    () =>
      createClient(base, adminKey, (message) =>
        onSignOut(`Signed out: the service refused the admin key (${message}).`),
      ),
    [adminKey, onSignOut],
  );
  const tenants = useLoad(
    async () =>
      (
        await collect(
          items(
            (cursor) =>
              unwrap(
                client.GET('/v1/admin/tenants', { params: { query: { cursor, limit: 100 } } }),
              ),
            (page) => page.tenants,
          ),
        )
      ).items,
    [client],
  );
  const context: ConsoleContext = useMemo(
    () => ({
      client,
      tenants: { list: tenants.data, reload: tenants.reload },
      notify: (message: string) => {
        setNotice(message);
        clearTimeout(noticeTimer.current);
        noticeTimer.current = setTimeout(() => setNotice(''), 8_000);
      },
    }),
    [client, tenants.data, tenants.reload],
  );
  useIdleTimeout(
    useCallback(
      () =>
        onSignOut(
          `Signed out after ${IDLE_TIMEOUT_MS / 60_000} minutes without activity. Sign in again to continue.`,
        ),
      [onSignOut],
    ),
  );

  const main = useRef<HTMLElement>(null);
  const first = useRef(true);
  useEffect(() => {
    document.title = `${PAGE_TITLES[page]} · Budget console`;
    // After a navigation, the page's heading is where a screen reader and the keyboard go on.
    if (!first.current) main.current?.querySelector('h1')?.focus();
    first.current = false;
  }, [page]);

  return (
    <Console.Provider value={context}>
      <button
        type="button"
        class="skip-link"
        onClick={() => main.current?.querySelector('h1')?.focus()}
      >
        Skip to content
      </button>
      <header class="top">
        <span class="brand">Budget console</span>
        <nav aria-label="Pages">
          <ul>
            {PAGES.map((p) => (
              <li key={p}>
                <a href={hrefOf(p)} aria-current={p === page ? 'page' : undefined}>
                  {PAGE_TITLES[p]}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <button type="button" class="sign-out" onClick={() => onSignOut('Signed out.')}>
          Sign out
        </button>
      </header>
      <div class="live" role="status" aria-live="polite">
        {notice}
      </div>
      <main id="main" ref={main}>
        <h1 tabIndex={-1}>{PAGE_TITLES[page]}</h1>
        <PageView page={page} params={params} />
      </main>
    </Console.Provider>
  );
}

function PageView({ page, params }: { readonly page: PageId; readonly params: Params }) {
  switch (page) {
    case 'overview':
      return <Overview />;
    case 'tenants':
      return <Tenants params={params} />;
    case 'budgets':
      return <Budgets params={params} />;
    case 'policies':
      return <Policies params={params} />;
    case 'reservations':
      return <Reservations params={params} />;
    case 'keys':
      return <ApiKeys params={params} />;
    case 'events':
      return <Events params={params} />;
    case 'webhooks':
      return <Webhooks params={params} />;
    case 'audit':
      return <Audit params={params} />;
  }
}
