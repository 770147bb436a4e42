import type { Queryable } from './transaction';

export interface AccountRow {
  id: string;
  name: string;
  created_at: Date;
}

export async function getAccount(db: Queryable, id: string): Promise<AccountRow | undefined> {
  const { rows } = await db.query<AccountRow>('SELECT id, name, created_at FROM accounts WHERE id = $1', [id]);
  return rows[0];
}
