export const name = '011_usage_outbox_tsv';

// Outbox rows now hold their events as ClickHouse TabSeparated text (`tsv`), cheaper to write,
// store and insert than JSONEachRow text. Rows accepted before this migration keep `rows` and are
// still flushed as they are. lz4 compresses the repetitive rows about four times at little cost;
// a server built without lz4 keeps its default compression.
export const sql = `
ALTER TABLE usage_outbox ALTER COLUMN rows DROP NOT NULL;
ALTER TABLE usage_outbox ADD COLUMN tsv text;
ALTER TABLE usage_outbox ADD CONSTRAINT usage_outbox_one_format CHECK ((rows IS NULL) <> (tsv IS NULL));
DO $$
BEGIN
  ALTER TABLE usage_outbox ALTER COLUMN tsv SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
  NULL;
END $$;
`;
