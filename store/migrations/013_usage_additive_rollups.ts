export const name = '013_usage_additive_rollups';

// The rollups become sums (see db/clickhouse): a first flush of a batch adds its events to them,
// and hours that may be off are corrected from the raw events.
// - attempts: how often the flush has started moving an outbox row; a row moved before may
//   already be in ClickHouse, in part, so its hours are corrected instead of added to. Rows
//   waiting at the upgrade count as attempted once: an earlier release may have inserted them
//   already, in a flush that failed before deleting them.
// - usage_pending_rollups now lists the hours whose rollups are not trusted: those of the batch
//   being moved, and those due for a correction (`reconcile`). Reads take them raw. The hours
//   listed by earlier releases never got rollups: they are due for a correction.
// - usage_rollup_backfill: the sums start empty, so every hour already in ClickHouse is corrected
//   once, from the raw events, by the next flush.
export const sql = `
ALTER TABLE usage_outbox ADD COLUMN attempts integer NOT NULL DEFAULT 1;
ALTER TABLE usage_outbox ALTER COLUMN attempts SET DEFAULT 0;
ALTER TABLE usage_pending_rollups ADD COLUMN reconcile boolean NOT NULL DEFAULT true;
ALTER TABLE usage_pending_rollups ALTER COLUMN reconcile DROP DEFAULT;
DROP SEQUENCE usage_rollup_version;
CREATE TABLE usage_rollup_backfill (
  due  boolean PRIMARY KEY DEFAULT true CHECK (due)
);
INSERT INTO usage_rollup_backfill DEFAULT VALUES;
`;
