export const name = '012_usage_pending_rollups';

// Hours whose events reached ClickHouse while the hour was still open. Rebuilding an open hour's
// rollups at every flush would re-read all of its events each time; instead its rollups are
// rebuilt once, after it closes, and metrics reads take it from the raw table until then.
export const sql = `
CREATE TABLE usage_pending_rollups (
  account_id  text NOT NULL,
  hour        bigint NOT NULL,
  PRIMARY KEY (account_id, hour)
);
`;
