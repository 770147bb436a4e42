/** A workload that names a connection in its spec. */
export interface ConnectionUser {
  kind: string;
  name: string;
}

/**
 * Why a connection cannot be deleted while `users` name it, e.g. "function(s) 'a', 'b' and
 * model(s) 'm'"; undefined when nothing uses it.
 */
export function connectionInUseProblem(connection: string, users: readonly ConnectionUser[]): string | undefined {
  if (users.length === 0) return undefined;
  const named = (kind: string, label: string) => {
    const names = users.filter((user) => user.kind === kind).map((user) => `'${user.name}'`);
    return names.length > 0 ? [`${label}(s) ${names.join(', ')}`] : [];
  };
  const list = [...named('functions', 'function'), ...named('models', 'model'), ...named('sandboxes', 'sandbox')].join(' and ');
  return `integration connection '${connection}' is used by ${list}: delete or rebind them first`;
}
