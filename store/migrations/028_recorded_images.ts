export const name = '028_recorded_images';

// New sandboxes, workloads and jobs record the image they run on in their spec, the default
// (`base-image`) when they name none. Every spec stored before names `base` from now on, which was
// the default then: existing resources, the revisions they deploy and the snapshots forks start
// from keep the host's folders. A spec's `runtime` that is not an object (none) becomes one.
const RECORD = (column: string) => `
  ${column} = jsonb_set(${column}, '{runtime}',
    (CASE WHEN jsonb_typeof(${column}->'runtime') = 'object' THEN ${column}->'runtime' ELSE '{}'::jsonb END) || '{"image": "base"}'::jsonb)`;
const NAMES_NONE = (column: string) => `COALESCE(${column}->'runtime'->>'image', '') = ''`;

export const sql = `
UPDATE resources SET ${RECORD('spec')}
  WHERE kind IN ('sandboxes', 'agents', 'functions', 'models', 'jobs') AND ${NAMES_NONE('spec')};
UPDATE workload_revisions SET ${RECORD('spec')} WHERE ${NAMES_NONE('spec')};
UPDATE sandbox_snapshots SET ${RECORD('source_spec')} WHERE ${NAMES_NONE('source_spec')};
`;
