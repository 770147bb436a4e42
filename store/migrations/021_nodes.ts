export const name = '021_nodes';

// The runtime nodes of the platform, each writing its own row (its capacity and load) every few
// seconds. Times are the database's: whether a node is silent is judged against one clock,
// whatever the nodes' own clocks say. A drained node keeps running what it has and is given
// nothing new.
export const sql = `
CREATE TABLE nodes (
  id                      text PRIMARY KEY,
  task_queue              text NOT NULL,
  region                  text NOT NULL,
  labels                  jsonb NOT NULL DEFAULT '{}',
  memory_bytes            bigint NOT NULL,
  cpus                    integer NOT NULL,
  disk_bytes              bigint NOT NULL,
  disk_free_bytes         bigint NOT NULL,
  memory_committed_bytes  bigint NOT NULL,
  sandboxes               integer NOT NULL,
  started_at              timestamptz NOT NULL,
  heartbeat_at            timestamptz NOT NULL,
  drained_at              timestamptz,
  registered_at           timestamptz NOT NULL DEFAULT now()
);
`;
