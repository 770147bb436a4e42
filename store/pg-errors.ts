/** PostgreSQL error codes the API turns into client answers. */
export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string })?.code === '23505';
}
