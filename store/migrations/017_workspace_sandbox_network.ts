export const name = '017_workspace_sandbox_network';

// A workspace's default `spec.network` for its new sandboxes (NULL: none, the platform's applies).
export const sql = `
ALTER TABLE workspaces ADD COLUMN default_sandbox_network jsonb;
`;
