export const name = '016_sandbox_snapshots';

// Snapshots of sandboxes: workspace objects that outlive their source (no foreign key to it:
// `source_id` only tells, by the resource row still existing, whether the source lives). The files
// are on the node whose task queue is `node_queue`, where forks of the snapshot start. A name is
// unique in its workspace, as the reference defines it.
export const sql = `
CREATE TABLE sandbox_snapshots (
  id            uuid PRIMARY KEY,
  workspace_id  text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name          text NOT NULL,
  source_id     uuid NOT NULL,
  source_name   text NOT NULL,
  source_spec   jsonb NOT NULL,
  node_queue    text NOT NULL,
  status        text NOT NULL,
  message       text,
  size_bytes    bigint,
  created_at    timestamptz NOT NULL DEFAULT now(),
  created_by    text,
  UNIQUE (workspace_id, name)
);
CREATE INDEX sandbox_snapshots_source ON sandbox_snapshots (workspace_id, source_name);
`;
