export const name = '026_registry_images';

// Images of registries a workspace's sandboxes and workloads had pulled onto a node, one row per
// canonical reference and node queue: what GET /v0/images shows of them (state PULLING, READY,
// FAILED with `reason`; the digest the reference was pulled as; the bytes the node stores for
// it; the pull's progress and events). The image's files are the node's store's, shared by
// every workspace that pulled the same digest; this row is the workspace's view of it.
export const sql = `
CREATE TABLE registry_images (
  id              uuid PRIMARY KEY,
  workspace_id    text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  reference       text NOT NULL,
  node_queue      text NOT NULL,
  state           text NOT NULL,
  reason          text,
  digest          text,
  size_bytes      bigint,
  progress        jsonb,
  events          jsonb NOT NULL DEFAULT '[]',
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (workspace_id, reference, node_queue)
);
`;
