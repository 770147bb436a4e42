export const name = '004_workloads';

// One row per code upload of a workload (agent, function, model, job). Revisions count up per
// resource; the spec is a snapshot of the resource's spec at upload, so a revision deploys the
// same way however often it is retried. A workload without code (a function bound to an
// integration) has revisions without a bundle.
export const sql = `
CREATE TABLE workload_revisions (
  resource_id    uuid NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
  revision       integer NOT NULL,
  bundle_sha256  text,
  bundle_bytes   bigint,
  spec           jsonb NOT NULL,
  status         text NOT NULL,
  message        text NOT NULL DEFAULT '',
  created_at     timestamptz NOT NULL DEFAULT now(),
  created_by     text,
  PRIMARY KEY (resource_id, revision)
);
`;
