import { useEffect, useState } from 'preact/hooks';
import { call, type Session } from '../api';
import type { ApiKeyRecord } from '../../../store/service-accounts';
import { ShownOnce } from './shown-once';

// The API's answer, as the server's own type says it (erased at build).
type ApiKey = ApiKeyRecord;

/** A service account's API keys: listed by prefix, created (the key shown once), revoked. */
export function ApiKeys({ session, clientId }: { session: Session; clientId: string }) {
  const path = `/v0/service_accounts/${encodeURIComponent(clientId)}/api_keys`;
  const [keys, setKeys] = useState<ApiKey[]>([]);
  const [created, setCreated] = useState<string | null>(null);
  const [error, setError] = useState('');
  const [version, setVersion] = useState(0);
  useEffect(() => {
    call<ApiKey[]>(session, path)
      .then(setKeys)
      .catch((err: Error) => setError(err.message));
  }, [session, path, version]);
  const act = async (work: () => Promise<void>) => {
    setError('');
    try {
      await work();
      setVersion((v) => v + 1);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const create = (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    const expiresIn = String(data.get('expiresIn') ?? '').trim();
    void act(async () => {
      const key = await call<{ apiKey: string }>(session, path, { method: 'POST', body: { name: String(data.get('name') ?? ''), ...(expiresIn ? { expiresIn } : {}) } });
      setCreated(key.apiKey);
      form.reset();
    });
  };
  return (
    <div class="api-keys">
      <table>
        <caption>API keys</caption>
        <thead>
          <tr>
            {['Name', 'Prefix', 'Created', 'Expires', 'Last used', 'Revoked', ''].map((t) => (
              <th scope="col">{t}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {keys.map((k) => (
            <tr data-key-name={k.name}>
              <td>{k.name}</td>
              <td>
                <code>{k.prefix}…</code>
              </td>
              <td>{k.createdAt}</td>
              <td>{k.expiresAt ?? 'never'}</td>
              <td>{k.lastUsedAt ?? 'never'}</td>
              <td>{k.revokedAt ?? ''}</td>
              <td>
                {!k.revokedAt && (
                  <button type="button" onClick={() => void act(async () => void (await call(session, `${path}/${encodeURIComponent(k.id)}`, { method: 'DELETE' })))}>
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form onSubmit={create} class="inline-form" aria-label={`New API key for ${clientId}`}>
        <label>
          Key name <input name="name" required maxLength={63} />
        </label>
        <label>
          Expires in <input name="expiresIn" placeholder="30d (empty: never)" pattern="[0-9]{1,9}[smhdw]" />
        </label>
        <button type="submit">Create API key</button>
      </form>
      {error && <p role="alert" class="error">{error}</p>}
      {created && <ShownOnce label="New API key" value={created} onDone={() => setCreated(null)} />}
    </div>
  );
}
