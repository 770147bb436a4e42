import { useEffect, useState } from 'preact/hooks';
import { ApiError, type Session } from '../api';

interface Entry {
  path: string;
  name: string;
  size?: number;
}
interface Listing {
  path: string;
  files: Entry[];
  subdirectories: Entry[];
  content?: string;
}

/** The sandbox's `GET /filesystem/{path}` through base_url's relay (api/console/sandbox-relay.ts). */
async function readPath(session: Session, sandbox: string, path: string): Promise<Listing> {
  const relative = path.replace(/^\/+/, '').split('/').map(encodeURIComponent).join('/');
  const response = await fetch(`/console/sandbox-files/${encodeURIComponent(session.workspace)}/${encodeURIComponent(sandbox)}/${relative}`, {
    headers: { authorization: `Bearer ${session.credential}` },
  });
  const body = (await response.json()) as Listing & { message?: string };
  if (!response.ok) throw new ApiError(response.status, body.message ?? `${response.status}`);
  return body;
}

const parentOf = (path: string) => path.replace(/\/[^/]*\/?$/, '') || '/';

/** Folders to walk through and text files to read, from the sandbox's root down. */
export function FileBrowser({ session, sandbox }: { session: Session; sandbox: string }) {
  const [path, setPath] = useState('/');
  const [listing, setListing] = useState<Listing | null>(null);
  const [file, setFile] = useState<{ path: string; content: string } | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    setError('');
    readPath(session, sandbox, path)
      .then(setListing)
      .catch((err: Error) => setError(err.message));
  }, [session, sandbox, path]);
  const open = (target: string) =>
    readPath(session, sandbox, target)
      .then((answer) => setFile({ path: target, content: answer.content ?? '' }))
      .catch((err: Error) => setError(err.message));
  return (
    <section aria-labelledby="files-title" class="files">
      <h2 id="files-title">Files</h2>
      <p>
        Folder <code>{path}</code>{' '}
        {path !== '/' && (
          <button type="button" onClick={() => setPath(parentOf(path))}>
            Up
          </button>
        )}
      </p>
      {error && <p role="alert" class="error">{error}</p>}
      <ul>
        {listing?.subdirectories.map((d) => (
          <li>
            <button type="button" class="link" onClick={() => setPath(d.path)}>
              {d.name}/
            </button>
          </li>
        ))}
        {listing?.files.map((f) => (
          <li>
            <button type="button" class="link" onClick={() => void open(f.path)}>
              {f.name}
            </button>{' '}
            <small>{f.size} bytes</small>
          </li>
        ))}
      </ul>
      {file && (
        <figure>
          <figcaption>{file.path}</figcaption>
          <pre class="file-content">{file.content}</pre>
        </figure>
      )}
    </section>
  );
}
