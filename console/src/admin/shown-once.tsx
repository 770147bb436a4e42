import { useState } from 'preact/hooks';

/**
 * A secret the API returns once (a new API key, a client secret): shown until dismissed, then
 * dropped from memory. The API keeps only its digest, so it cannot be shown again.
 */
export function ShownOnce({ label, value, onDone }: { label: string; value: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  return (
    <div role="dialog" aria-label={label} class="shown-once">
      <p>
        <strong>{label}</strong>: copy it now, it will not be shown again.
      </p>
      <output class="secret" data-secret="shown-once">
        {value}
      </output>
      <button type="button" onClick={() => void navigator.clipboard?.writeText(value).then(() => setCopied(true))}>
        {copied ? 'Copied' : 'Copy'}
      </button>
      <button type="button" onClick={onDone}>
        I have saved it
      </button>
    </div>
  );
}
