import { useState } from 'preact/hooks';
import { exchangeApiKey, exchangeClientCredentials, openSession, type Session } from './api';

type Method = 'api-key' | 'client-credentials';

/** Sign-in with an API key, or a service account's client id and secret, either exchanged for a short-lived token. */
export function SignIn({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const [method, setMethod] = useState<Method>('api-key');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    // Marks read by the benchmark (bench/console/billing-load.ts): sign-in to chart drawn.
    performance.mark('hangar:sign-in');
    setBusy(true);
    setError('');
    try {
      const token =
        method === 'api-key'
          ? await exchangeApiKey(String(form.get('apiKey') ?? '').trim())
          : await exchangeClientCredentials(String(form.get('clientId') ?? '').trim(), String(form.get('clientSecret') ?? ''));
      onSignedIn(await openSession(token));
    } catch (err) {
      setError(`Sign-in refused: ${(err as Error).message}`);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="sign-in">
      <h1>Hangar console</h1>
      <form onSubmit={submit} aria-describedby="sign-in-note">
        <fieldset>
          <legend>Sign in with</legend>
          <label>
            <input type="radio" name="method" checked={method === 'api-key'} onChange={() => setMethod('api-key')} /> an API key
          </label>
          <label>
            <input type="radio" name="method" checked={method === 'client-credentials'} onChange={() => setMethod('client-credentials')} /> service-account credentials
          </label>
        </fieldset>
        {method === 'api-key' ? (
          <label>
            API key
            <input name="apiKey" type="password" autocomplete="off" required />
          </label>
        ) : (
          <>
            <label>
              Client id
              <input name="clientId" autocomplete="off" required />
            </label>
            <label>
              Client secret
              <input name="clientSecret" type="password" autocomplete="off" required />
            </label>
          </>
        )}
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        {error && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
        <p id="sign-in-note" class="note">
          The credential is kept in this page's memory only: reloading the page or closing the tab signs you out.
        </p>
      </form>
    </main>
  );
}
