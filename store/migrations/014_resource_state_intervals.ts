export const name = '014_resource_state_intervals';

// The state history that bills are checked against (npm run billing:check): per billed resource,
// the intervals it spent in each state with the facts that set its price in that state (the
// memory it holds, the bytes it stores). Written where the state changes, never by the metering
// itself; kept after the resource is deleted, as its bills are. Identities are those of the usage
// events (workspace name, billing resource type, resource uuid), so the two compare directly.
export const sql = `
CREATE TABLE resource_state_intervals (
  id             bigserial PRIMARY KEY,
  account_id     text NOT NULL,
  workspace_id   text NOT NULL,
  workspace      text NOT NULL,
  resource_type  text NOT NULL,
  resource_uuid  text NOT NULL,
  resource_name  text NOT NULL,
  state          text NOT NULL,
  memory_mb      integer NOT NULL DEFAULT 0,
  stored_bytes   bigint NOT NULL DEFAULT 0,
  started_at     timestamptz NOT NULL,
  ended_at       timestamptz,
  CHECK (ended_at IS NULL OR ended_at >= started_at)
);
-- At most one open interval per resource: a state change closes it before opening the next.
CREATE UNIQUE INDEX resource_state_intervals_open ON resource_state_intervals (resource_uuid) WHERE ended_at IS NULL;
CREATE INDEX resource_state_intervals_account_end ON resource_state_intervals (account_id, (COALESCE(ended_at, 'infinity')));
`;
