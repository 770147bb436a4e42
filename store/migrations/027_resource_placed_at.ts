export const name = '027_resource_placed_at';

// When a resource was placed on its node. A node's heartbeat (every 2 s) reports the memory its
// sandboxes commit; sandboxes placed since then are not in it yet, and placement counts them from
// their rows (store/nodes.ts), so a burst of creates spreads over the nodes instead of all going
// to the one whose last report looked freest.
export const sql = `
ALTER TABLE resources ADD COLUMN placed_at timestamptz;
CREATE INDEX resources_node_placed_at ON resources (node_id, placed_at) WHERE node_id IS NOT NULL;
`;
