import { useEffect, useState } from 'preact/hooks';
import { call, workflowLink, type ConsoleConfig, type Session } from '../api';
import { href, onLink } from '../router';
import { JobExecutions } from './job-executions';
import { ago, KINDS, type Resource, type ResourceKind } from './kinds';

function Events({ events }: { events: Resource['events'] }) {
  if (!events?.length) return <span>none</span>;
  return (
    <details>
      <summary>{events.length} events</summary>
      <ol class="events">
        {events.map((e) => (
          <li>
            <time dateTime={e.time}>{e.time}</time> {e.type} {e.status}: {e.message}
          </li>
        ))}
      </ol>
    </details>
  );
}

function WorkflowCell({ kind, resource, config }: { kind: ResourceKind; resource: Resource; config: ConsoleConfig }) {
  const link = kind.workflowId && workflowLink(config, kind.workflowId(resource.metadata.workspace, resource.metadata.name));
  return <td>{link ? <a href={link} target="_blank" rel="noopener noreferrer">workflow</a> : '—'}</td>;
}

/** The columns a kind adds: a sandbox's state, memory and last use; a volume's size; a connection's integration. */
function kindColumns(kind: ResourceKind): [string, (r: Resource) => string][] {
  const runtime = (r: Resource) => (r.spec.runtime ?? {}) as { memory?: number };
  if (kind.path === 'sandboxes') return [['State', (r) => r.state ?? '—'], ['Memory', (r) => (runtime(r).memory ? `${runtime(r).memory} MB` : '—')], ['Last use', (r) => ago(r.lastUsedAt)]];
  if (kind.path === 'volumes') return [['Size', (r) => (r.spec.size ? `${String(r.spec.size)} MB` : '—')]];
  if (kind.path === 'customdomains') return [['Domain', (r) => String(r.spec.domain ?? '')]];
  // A connection's secrets are never shown, not even masked: only which integration it is for.
  if (kind.path === 'connections') return [['Integration', (r) => String(r.spec.integration ?? '')]];
  return [['Memory', (r) => (runtime(r).memory ? `${runtime(r).memory} MB` : '—')]];
}

function ResourceTable({ kind, items, session, config }: { kind: ResourceKind; items: Resource[]; session: Session; config: ConsoleConfig }) {
  const columns = kindColumns(kind);
  return (
    <table class="resources" data-kind={kind.path}>
      <caption>
        {kind.title} of {session.workspace}
      </caption>
      <thead>
        <tr>
          {['Name', 'Status', ...columns.map(([title]) => title), 'Age', 'Events', 'Workflow'].map((t) => (
            <th scope="col">{t}</th>
          ))}
        </tr>
      </thead>
      <tbody>
        {items.map((r) => (
          <tr data-name={r.metadata.name}>
            <th scope="row">{kind.path === 'sandboxes' ? <a href={href(`sandboxes/${encodeURIComponent(r.metadata.name)}`)} onClick={onLink(`sandboxes/${encodeURIComponent(r.metadata.name)}`)}>{r.metadata.name}</a> : r.metadata.name}</th>
            <td>{r.status ?? '—'}</td>
            {columns.map(([, value]) => (
              <td>{value(r)}</td>
            ))}
            <td>{ago(r.metadata.createdAt)}</td>
            <td>
              <Events events={r.events} />
              {kind.path === 'jobs' && <JobExecutions session={session} config={config} job={r.metadata.name} />}
            </td>
            <WorkflowCell kind={kind} resource={r} config={config} />
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The resources of the workspace, one kind at a time, with status, events and workflow links. */
export function ResourcesPage({ session, config, kind: kindPath }: { session: Session; config: ConsoleConfig; kind: string }) {
  const kind = KINDS.find((k) => k.path === kindPath) ?? KINDS[0];
  const [items, setItems] = useState<Resource[] | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    let current = true;
    setItems(null);
    setError('');
    call<Resource[]>(session, kind.list)
      .then((list) => current && setItems(list))
      .catch((err: Error) => current && setError(err.message));
    return () => void (current = false);
  }, [session, kind]);
  return (
    <section aria-labelledby="resources-title">
      <h1 id="resources-title">Resources</h1>
      <nav aria-label="Kinds" class="tabs">
        {KINDS.map((k) => (
          <a href={href(`resources/${k.path}`)} onClick={onLink(`resources/${k.path}`)} aria-current={k === kind ? 'page' : undefined}>
            {k.title}
          </a>
        ))}
      </nav>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {items && (items.length ? <ResourceTable kind={kind} items={items} session={session} config={config} /> : <p>No {kind.title.toLowerCase()} in {session.workspace}.</p>)}
      {!items && !error && <p aria-live="polite">Loading…</p>}
    </section>
  );
}
