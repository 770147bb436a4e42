import { useState } from 'preact/hooks';
import { call, workflowLink, type ConsoleConfig, type Session } from '../api';

interface Execution {
  executionId: string;
  status: string;
  metadata: { createdAt: string };
  stats: { total: number; success: number; failure: number; running: number; cancelled: number };
}

/** A job's executions (newest first), each with its tasks' progress, loaded when opened. */
export function JobExecutions({ session, config, job }: { session: Session; config: ConsoleConfig; job: string }) {
  const [executions, setExecutions] = useState<Execution[] | null>(null);
  const [error, setError] = useState('');
  const load = (open: boolean) => {
    if (!open || executions) return;
    call<Execution[]>(session, `/${encodeURIComponent(session.workspace)}/jobs/${encodeURIComponent(job)}/executions?limit=20`)
      .then(setExecutions)
      .catch((err: Error) => setError(err.message));
  };
  return (
    <details onToggle={(e) => load((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>executions</summary>
      {error && <p role="alert">{error}</p>}
      <ul class="executions">
        {executions?.map((x) => {
          const done = x.stats.success + x.stats.failure + x.stats.cancelled;
          const link = workflowLink(config, `job/${session.workspace}/${job}/${x.executionId}`);
          return (
            <li>
              {x.executionId} {x.status}{' '}
              <progress max={x.stats.total || 1} value={done} aria-label={`tasks done of ${x.executionId}`} /> {done}/{x.stats.total} tasks ({x.stats.failure} failed, {x.stats.running} running)
              {link && (
                <>
                  {' '}
                  <a href={link} target="_blank" rel="noopener noreferrer">
                    workflow
                  </a>
                </>
              )}
            </li>
          );
        })}
      </ul>
    </details>
  );
}
