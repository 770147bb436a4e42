export const name = '002_billing';

// Usage metering. Accepted events are first made durable here (ledger + outbox) and moved to
// ClickHouse by the usage-flush workflow; prices fix each event's cost at acceptance.
export const sql = `
-- USD per unit of each billing dimension (gbs: per GB-second, count: per event, hours: per hour).
CREATE TABLE billing_default_prices (
  billing_dimension  text PRIMARY KEY,
  usd_per_unit       numeric(30, 12) NOT NULL CHECK (usd_per_unit >= 0)
);
INSERT INTO billing_default_prices (billing_dimension, usd_per_unit) VALUES
  ('sandbox_compute_runtime_gbs',      0.000008300000),  -- about 0.03 USD per GB-hour
  ('sandbox_image_storage_gbs',        0.000000038600),  -- about 0.10 USD per GB-month
  ('sandbox_snapshot_storage_gbs',     0.000000038600),
  ('agent_compute_runtime_gbs',        0.000008300000),
  ('agent_image_storage_gbs',          0.000000038600),
  ('agent_async_requests_count',       0.000100000000),  -- 0.10 USD per thousand requests
  ('job_compute_runtime_gbs',          0.000006900000),
  ('job_image_storage_gbs',            0.000000038600),
  ('mcp_server_compute_runtime_gbs',   0.000008300000),
  ('mcp_server_image_storage_gbs',     0.000000038600),
  ('volume_storage_gbs',               0.000000030900),  -- about 0.08 USD per GB-month
  ('custom_domain_active_time_hours',  0.001400000000);  -- about 1 USD per month

-- Negotiated prices: an account's row replaces the default for that dimension.
CREATE TABLE billing_account_prices (
  account_id         text NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  billing_dimension  text NOT NULL REFERENCES billing_default_prices(billing_dimension),
  usd_per_unit       numeric(30, 12) NOT NULL CHECK (usd_per_unit >= 0),
  PRIMARY KEY (account_id, billing_dimension)
);

-- Every event id ever accepted, for idempotency: key = digest of (account, event id), with a
-- digest of the payload so that a re-sent id with different content is refused (409).
-- Kept narrow (two fixed-width columns) because it grows with every event.
CREATE TABLE usage_event_ledger (
  event_key     uuid PRIMARY KEY,
  payload_hash  bigint NOT NULL
);

-- Accepted events not yet in ClickHouse, one row per accepted request: the rows are ready-made
-- ClickHouse JSONEachRow lines (cost included), hours lists the hour starts (epoch seconds) they
-- fall in, for the rollup rebuild. The flush deletes a row only after ClickHouse has its events.
CREATE TABLE usage_outbox (
  seq          bigserial PRIMARY KEY,
  account_id   text NOT NULL,
  event_count  integer NOT NULL,
  hours        bigint[] NOT NULL,
  rows         text NOT NULL,
  accepted_at  timestamptz NOT NULL DEFAULT now()
);
-- The rows are read once and deleted within seconds: compressing them is wasted work.
ALTER TABLE usage_outbox ALTER COLUMN rows SET STORAGE EXTERNAL;

-- Versions of rebuilt rollup rows: a later rebuild always wins, whichever worker runs it.
CREATE SEQUENCE usage_rollup_version;
`;
