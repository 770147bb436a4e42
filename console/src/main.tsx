import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { ComponentType } from 'preact';
import { consoleConfig, type ConsoleConfig, type Session } from './api';
import { SignIn } from './sign-in';
import { href, onLink, useRoute } from './router';
import { BillingPage } from './billing/billing-page';
import { ResourcesPage } from './resources/resources-page';
import { AdminPage } from './admin/admin-page';
import './style.css';

const SECTIONS = [
  ['billing', 'Billing'],
  ['resources', 'Resources'],
  ['admin', 'Workspace admin'],
] as const;

type SandboxPageProps = { session: Session; config: ConsoleConfig; name: string };

/** The sandbox page brings xterm.js, the largest part of the console: loaded when first opened, not with billing. */
function LazySandboxPage(props: SandboxPageProps) {
  const [Loaded, setLoaded] = useState<ComponentType<SandboxPageProps> | null>(null);
  useEffect(() => void import('./sandbox/sandbox-page').then((m) => setLoaded(() => m.SandboxPage)), []);
  return Loaded ? <Loaded {...props} /> : <p aria-live="polite">Loading…</p>;
}

function Page({ route, session, config }: { route: string; session: Session; config: ConsoleConfig }) {
  const [section, ...rest] = route.split('/');
  if (section === 'resources') return <ResourcesPage session={session} config={config} kind={rest[0] ?? 'sandboxes'} />;
  if (section === 'sandboxes' && rest[0]) return <LazySandboxPage session={session} config={config} name={decodeURIComponent(rest[0])} />;
  if (section === 'admin') return <AdminPage session={session} />;
  return <BillingPage session={session} />;
}

function Shell({ session, setSession, config }: { session: Session; setSession: (s: Session | null) => void; config: ConsoleConfig }) {
  const route = useRoute();
  return (
    <>
      <header>
        <nav aria-label="Sections">
          <strong>Hangar</strong>
          {SECTIONS.map(([path, label]) => (
            <a href={href(path)} onClick={onLink(path)} aria-current={route.startsWith(path) ? 'page' : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <label>
          Workspace{' '}
          <select value={session.workspace} onChange={(e) => setSession({ ...session, workspace: (e.target as HTMLSelectElement).value })}>
            {session.workspaces.map((w) => (
              <option value={w}>{w}</option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => setSession(null)}>
          Sign out
        </button>
      </header>
      <main key={session.workspace}>
        <Page route={route} session={session} config={config} />
      </main>
    </>
  );
}

function App() {
  const [session, setSession] = useState<Session | null>(null);
  const [config, setConfig] = useState<ConsoleConfig>({ temporalUiUrl: null, temporalNamespace: 'default' });
  useEffect(() => void consoleConfig().then(setConfig), []);
  // An access token is short-lived: past its expiry the session ends, as a reload would.
  useEffect(() => {
    if (!session?.expiresAt) return;
    const timer = setTimeout(() => setSession(null), Math.max(0, session.expiresAt - Date.now()));
    return () => clearTimeout(timer);
  }, [session?.expiresAt]);
  // Signing in keeps the address asked for (a link to a sandbox or a billing query opens there).
  if (!session) return <SignIn onSignedIn={setSession} />;
  return <Shell session={session} setSession={setSession} config={config} />;
}

render(<App />, document.getElementById('app') as HTMLElement);
performance.mark('hangar:ready');
