import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { notFound } from '../../../domain/errors';
import { getAccount, type AccountRow } from '../../../store/accounts';
import { commonErrors } from '../common-schemas';

const Account = Type.Object({
  id: Type.String(),
  name: Type.String(),
  role: Type.Union([Type.Literal('admin'), Type.Literal('member')], { description: "The caller's role in the account." }),
  createdAt: Type.String({ format: 'date-time' }),
});

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
      const account = await getAccount(app.pg, request.principal.accountId);
      return account ? [toAccount(account, request.principal.accountAdmin)] : [];
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
      const account = await getAccount(app.pg, accountId);
      if (!account) throw notFound(`account '${accountId}' not found`);
      return toAccount(account, request.principal.accountAdmin);
    },
  );
}
