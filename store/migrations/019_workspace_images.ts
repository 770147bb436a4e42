export const name = '019_workspace_images';

// Images a workspace built (its own `name:tag`s). The image itself is on the node whose task
// queue is `node_queue`, content-addressed by `digest` (its manifest's) in the node's store; this
// row is what the API shows: its state (BUILDING, READY, FAILED with `reason`), progress, events.
// `build` counts the builds of the tag, so each gets a workflow id of its own; `context_sha256`
// names the uploaded build context of the newest one.
export const sql = `
CREATE TABLE workspace_images (
  id              uuid PRIMARY KEY,
  workspace_id    text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name            text NOT NULL,
  tag             text NOT NULL,
  state           text NOT NULL,
  reason          text,
  digest          text,
  size_bytes      bigint,
  progress        jsonb,
  events          jsonb NOT NULL DEFAULT '[]',
  build           integer NOT NULL DEFAULT 1,
  context_sha256  text,
  node_queue      text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  created_by      text,
  UNIQUE (workspace_id, name, tag)
);
`;
