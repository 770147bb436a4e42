export const name = '029_snapshot_ready_at';

// When a snapshot's capture ended. The node may settle a capture before the snapshot's workflow
// hears of it (it begins the copy on the snapshot's announcement), so the workflow bills the
// snapshot's storage from this time rather than from when its own activity ended.
export const sql = `
ALTER TABLE sandbox_snapshots ADD COLUMN ready_at timestamptz;
`;
