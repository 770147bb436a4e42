export const name = '003_integrations';

// Integration connections hold third-party credentials: the whole secret map is sealed with the
// master key (associated data: the row id) and only a masked preview is kept in clear. `tenant`
// and `provisioning_id` are set when a provisioning created the connection, so that a saga only
// ever removes or overwrites what it owns.
export const sql = `
CREATE TABLE integration_connections (
  id               uuid PRIMARY KEY,
  workspace_id     text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name             text NOT NULL,
  display_name     text NOT NULL,
  labels           jsonb NOT NULL DEFAULT '{}',
  integration      text NOT NULL,
  sealed_secret    text NOT NULL,
  secret_preview   jsonb NOT NULL,
  tenant           text,
  provisioning_id  text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  created_by       text,
  updated_by       text,
  UNIQUE (workspace_id, name)
);

-- One row per run of the OAuth-to-MCP provisioning workflow; its id is the run's id.
CREATE TABLE integration_provisionings (
  id            text PRIMARY KEY,
  workspace_id  text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  tenant        text NOT NULL,
  integration   text NOT NULL,
  -- SHA-256 of the authorization code: a retried request with the same code finds its run.
  code_hash     text NOT NULL,
  status        text NOT NULL CHECK (status IN ('RUNNING', 'SUCCEEDED', 'FAILED')),
  result        jsonb,
  error         text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  created_by    text
);
CREATE INDEX integration_provisionings_code ON integration_provisionings(workspace_id, tenant, code_hash);
`;
