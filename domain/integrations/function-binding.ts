/** The only function type: an MCP server. Its runtime type is the same word. */
export const MCP_FUNCTION_TYPE = 'mcp';

interface FunctionSpecShape {
  type?: unknown;
  integrationConnections?: unknown;
  runtime?: { type?: unknown } | unknown;
}

/**
 * Checks the parts of a function spec that relate its type, its runtime type and its bound
 * integration connections; returns a message naming the field, or undefined. Whether the named
 * connections exist is for the caller to check, as it needs the database.
 */
export function functionSpecProblem(spec: FunctionSpecShape): string | undefined {
  const runtimeType = typeof spec.runtime === 'object' && spec.runtime !== null ? (spec.runtime as { type?: unknown }).type : undefined;
  if (spec.type !== undefined && spec.type !== MCP_FUNCTION_TYPE) return `spec.type must be '${MCP_FUNCTION_TYPE}'`;
  if (runtimeType !== undefined && runtimeType !== MCP_FUNCTION_TYPE) return `spec.runtime.type must be '${MCP_FUNCTION_TYPE}'`;
  const connections = boundConnections(spec);
  if (connections.length > 0) {
    // A function bound to connections runs an integration's MCP server: both types must say so.
    if (spec.type === undefined) return `spec.type is required (value '${MCP_FUNCTION_TYPE}') when spec.integrationConnections is given`;
    if (runtimeType === undefined) return `spec.runtime.type is required (value '${MCP_FUNCTION_TYPE}') when spec.integrationConnections is given`;
    const duplicate = connections.find((name, index) => connections.indexOf(name) !== index);
    if (duplicate !== undefined) return `spec.integrationConnections names '${duplicate}' twice`;
  }
  return undefined;
}

export function boundConnections(spec: FunctionSpecShape): string[] {
  return Array.isArray(spec.integrationConnections) ? spec.integrationConnections.filter((name): name is string => typeof name === 'string') : [];
}
