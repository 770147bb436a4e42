import * as foundation from './001_foundation';

export interface Migration {
  name: string;
  sql: string;
}

/** Applied in this order; a migration, once released, is never edited: add a new one. */
export const migrations: Migration[] = [foundation];
