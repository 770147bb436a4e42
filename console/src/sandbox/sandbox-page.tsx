import { useEffect, useState } from 'preact/hooks';
import { call, workflowLink, type ConsoleConfig, type Session } from '../api';
import { href, onLink } from '../router';
import { ago, type Resource } from '../resources/kinds';
import { FileBrowser } from './file-browser';
import { SandboxTerminal } from './terminal';

/** One sandbox: its state and events, its files, and a terminal in it. */
export function SandboxPage({ session, config, name }: { session: Session; config: ConsoleConfig; name: string }) {
  const [sandbox, setSandbox] = useState<Resource | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    call<Resource>(session, `/v0/sandboxes/${encodeURIComponent(name)}`)
      .then(setSandbox)
      .catch((err: Error) => setError(err.message));
  }, [session, name]);
  const link = workflowLink(config, `sandbox/${session.workspace}/${name}`);
  return (
    <section aria-labelledby="sandbox-title">
      <p>
        <a href={href('resources/sandboxes')} onClick={onLink('resources/sandboxes')}>
          Sandboxes
        </a>
      </p>
      <h1 id="sandbox-title">Sandbox {name}</h1>
      {error && <p role="alert" class="error">{error}</p>}
      {sandbox && (
        <dl class="facts">
          <dt>Status</dt>
          <dd>{sandbox.status}</dd>
          <dt>State</dt>
          <dd>{sandbox.state ?? '—'}</dd>
          <dt>Created</dt>
          <dd>{ago(sandbox.metadata.createdAt)}</dd>
          <dt>Last use</dt>
          <dd>{ago(sandbox.lastUsedAt)}</dd>
          {link && (
            <>
              <dt>Workflow</dt>
              <dd>
                <a href={link} target="_blank" rel="noopener noreferrer">
                  in the Temporal UI
                </a>
              </dd>
            </>
          )}
        </dl>
      )}
      {sandbox?.status === 'DEPLOYED' && (
        <div class="sandbox-tools">
          <SandboxTerminal session={session} sandbox={name} />
          <FileBrowser session={session} sandbox={name} />
        </div>
      )}
    </section>
  );
}
