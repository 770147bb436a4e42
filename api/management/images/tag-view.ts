/** What an image tag's row holds of its state, whichever store it comes from (workspace images, registry images). */
export interface ImageTagState {
  state: string;
  reason: string | null;
  digest: string | null;
  size_bytes: string | null;
  progress: unknown;
  events: unknown;
  created_at: Date;
  updated_at: Date;
}

/** One tag of an image on the API: its name, the reference it stands for and its state. */
export function tagView<Row extends ImageTagState>(name: string, reference: string, row: Row) {
  return {
    name,
    reference,
    state: row.state as Row['state'],
    reason: row.reason,
    digest: row.digest,
    sizeBytes: row.size_bytes === null ? null : Number(row.size_bytes),
    progress: row.progress as Row['progress'],
    events: row.events as Row['events'],
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
