export const name = '024_node_images';

// The built-in images a node makes itself (base-image, built from Debian's packages on first
// need), one row per node and image: whether it is building, stored (its digest and size) or its
// last build failed, for `/v0/images` to show what the nodes hold.
export const sql = `
CREATE TABLE node_images (
  node_id text NOT NULL,
  name text NOT NULL,
  state text NOT NULL CHECK (state IN ('BUILDING', 'READY', 'FAILED')),
  digest text,
  size_bytes bigint,
  reason text,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (node_id, name)
);
`;
