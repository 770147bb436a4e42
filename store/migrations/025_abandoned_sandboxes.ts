export const name = '025_abandoned_sandboxes';

// Sandboxes a LOST node still holds on its disk but must never run again: their resource was
// marked lost (and may have been deleted since). The node removes each before it takes work
// again; the row outlives the resource, which is why it is a table of its own.
export const sql = `
CREATE TABLE abandoned_sandboxes (
  node_id text NOT NULL,
  sandbox_id text NOT NULL,
  abandoned_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (node_id, sandbox_id)
);
`;
