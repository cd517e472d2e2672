import { useState } from 'preact/hooks';
import { ApiError, createClient, unwrap } from '../api.js';
import { ErrorMessage } from '../components.js';
import { InputError } from '../errors.js';

/**
 * The admin key, checked against GET /v1/auth/introspect before the console opens. The field
 * is a password field the browser does not fill or remember; the key leaves it only for the
 * session (session.ts).
 */
export function SignIn({
  base,
  reason,
  onSignedIn,
}: {
  readonly base: string;
  readonly reason?: string | undefined;
  readonly onSignedIn: (key: string) => void;
}) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const client = createClient(base, key.trim(), () => undefined);
      const me = await unwrap(client.GET('/v1/auth/introspect'));
      if (me.auth_type !== 'admin') {
        throw new InputError('that is a tenant API key, not the admin key.', 'Admin API key');
      }
      onSignedIn(key.trim());
    } catch (caught) {
      setError(
        caught instanceof ApiError && caught.status === 401
          ? new InputError(
              'That key was refused. Use the ADMIN_API_KEY of this service.',
              'Admin API key',
            )
          : caught instanceof Error
            ? caught
            : new Error(String(caught)),
      );
      setBusy(false);
    }
  };

  return (
    <main id="main" class="sign-in">
      <h1>Budget console</h1>
      <p>
        Operators sign in with the service's admin key (ADMIN_API_KEY; in AWS, the admin key
        secret).
      </p>
      {reason && (
        <p class="notice" role="status">
          {reason}
        </p>
      )}
      <form onSubmit={submit}>
        <div class="field">
          <label for="admin-key">Admin API key</label>
          <input
            id="admin-key"
            type="password"
            autoComplete="off"
            spellcheck={false}
            required
            value={key}
            onInput={(e) => setKey(e.currentTarget.value)}
          />
        </div>
        <ErrorMessage error={error} />
        <button type="submit" class="primary" disabled={busy || key.trim() === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <p class="muted">
        The key stays in this tab only (session storage) and is forgotten after 15 minutes without
        activity or when the tab closes.
      </p>
    </main>
  );
}
