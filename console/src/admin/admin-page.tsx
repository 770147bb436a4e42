import { useEffect, useState } from 'preact/hooks';
import { call, type Session } from '../api';
import { ApiKeys } from './api-keys';
import { ShownOnce } from './shown-once';

export interface ServiceAccount {
  clientId: string;
  name: string;
  accountAdmin: boolean;
  workspaces: { workspace: string; role: string }[];
  createdAt: string;
}

function NewServiceAccount({ session, onCreated }: { session: Session; onCreated: () => void }) {
  const [error, setError] = useState('');
  const [secret, setSecret] = useState<{ clientId: string; clientSecret: string } | null>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    setError('');
    try {
      const created = await call<{ clientId: string; clientSecret: string }>(session, '/v0/service_accounts', {
        method: 'POST',
        body: { name: String(data.get('name') ?? ''), role: String(data.get('role') ?? 'member') },
      });
      setSecret({ clientId: created.clientId, clientSecret: created.clientSecret });
      form.reset();
      onCreated();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <form onSubmit={submit} class="inline-form" aria-label="New service account">
      <label>
        Name <input name="name" required maxLength={63} />
      </label>
      <label>
        Role{' '}
        <select name="role">
          <option value="member">member</option>
          <option value="admin">admin</option>
        </select>
      </label>
      <button type="submit">Create service account</button>
      {error && <p role="alert" class="error">{error}</p>}
      {secret && <ShownOnce label={`Client secret of ${secret.clientId}`} value={secret.clientSecret} onDone={() => setSecret(null)} />}
    </form>
  );
}

/** Service accounts of the workspace and their API keys (workspace admins). */
export function AdminPage({ session }: { session: Session }) {
  const [accounts, setAccounts] = useState<ServiceAccount[] | null>(null);
  const [error, setError] = useState('');
  const [version, setVersion] = useState(0);
  useEffect(() => {
    call<ServiceAccount[]>(session, '/v0/service_accounts')
      .then(setAccounts)
      .catch((err: Error) => setError(err.message));
  }, [session, version]);
  return (
    <section aria-labelledby="admin-title">
      <h1 id="admin-title">Workspace admin</h1>
      <h2>Service accounts of {session.workspace}</h2>
      <NewServiceAccount session={session} onCreated={() => setVersion(version + 1)} />
      {error && <p role="alert" class="error">{error}</p>}
      {accounts?.map((a) => (
        <article class="service-account" data-client-id={a.clientId} aria-label={`Service account ${a.name}`}>
          <h3>
            {a.name} <small>{a.clientId}</small>
          </h3>
          <p>
            {a.accountAdmin ? 'account admin; ' : ''}
            {a.workspaces.map((w) => `${w.workspace}: ${w.role}`).join(', ')}
          </p>
          <ApiKeys session={session} clientId={a.clientId} />
        </article>
      ))}
    </section>
  );
}
