export const name = '023_resource_nodes';

// Where a sandbox, volume or workload revision runs, chosen inside its workflow
// (domain/nodes/placement.ts) and changed only when that node is lost. Rows from before placement
// have none: they run on the node of the API that created them. A node's listener is the address
// other hosts' gateways reach its sandboxes and workloads at; a node without one is reached only
// on its own host.
export const sql = `
ALTER TABLE resources ADD COLUMN node_id text;
ALTER TABLE workload_revisions ADD COLUMN node_id text;
ALTER TABLE nodes ADD COLUMN listener_url text;
`;
