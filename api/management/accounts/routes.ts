import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { notFound } from '../../../domain/errors';
import { commonErrors } from '../common-schemas';

const Account = Type.Object({
  id: Type.String(),
  name: Type.String(),
  role: Type.Union([Type.Literal('admin'), Type.Literal('member')], { description: "The caller's role in the account." }),
  createdAt: Type.String({ format: 'date-time' }),
});

interface AccountRow {
  id: string;
  name: string;
  created_at: Date;
}

export default async function accountRoutes(app: FastifyInstance) {
  const toAccount = (row: AccountRow, admin: boolean) => ({
    id: row.id,
    name: row.name,
    role: admin ? 'admin' : 'member',
    createdAt: row.created_at.toISOString(),
  });

  app.get(
    '/v0/accounts',
    { schema: { tags: ['accounts'], summary: "The caller's accounts", response: { 200: Type.Array(Account), ...commonErrors } } },
    async (request) => {
      const { rows } = await app.pg.query<AccountRow>('SELECT id, name, created_at FROM accounts WHERE id = $1', [
        request.principal.accountId,
      ]);
      return rows.map((row) => toAccount(row, request.principal.accountAdmin));
    },
  );

  app.get(
    '/v0/accounts/:accountId',
    {
      schema: {
        tags: ['accounts'],
        params: Type.Object({ accountId: Type.String({ maxLength: 100 }) }),
        response: { 200: Account, ...commonErrors },
      },
    },
    async (request) => {
      const { accountId } = request.params as { accountId: string };
      if (accountId !== request.principal.accountId) throw notFound(`account '${accountId}' not found`);
      const { rows } = await app.pg.query<AccountRow>('SELECT id, name, created_at FROM accounts WHERE id = $1', [accountId]);
      if (!rows[0]) throw notFound(`account '${accountId}' not found`);
      return toAccount(rows[0], request.principal.accountAdmin);
    },
  );
}
