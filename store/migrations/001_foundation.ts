export const name = '001_foundation';

// Control-plane state. Names are unique per (workspace, kind); workspace names are global because
// they appear in gateway paths ({run_url}/{workspace}/...).
export const sql = `
CREATE TABLE accounts (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE workspaces (
  id            text PRIMARY KEY,
  account_id    text NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  name          text NOT NULL UNIQUE,
  display_name  text NOT NULL,
  labels        jsonb NOT NULL DEFAULT '{}',
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  created_by    text,
  updated_by    text
);
CREATE INDEX workspaces_account ON workspaces(account_id);

CREATE TABLE service_accounts (
  id             text PRIMARY KEY,
  account_id     text NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  client_id      text NOT NULL UNIQUE,
  name           text NOT NULL,
  secret_hash    text NOT NULL,
  account_admin  boolean NOT NULL DEFAULT false,
  created_at     timestamptz NOT NULL DEFAULT now(),
  created_by     text
);

CREATE TABLE workspace_members (
  workspace_id  text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  principal_id  text NOT NULL REFERENCES service_accounts(id) ON DELETE CASCADE,
  role          text NOT NULL CHECK (role IN ('admin', 'member')),
  PRIMARY KEY (workspace_id, principal_id)
);
CREATE INDEX workspace_members_principal ON workspace_members(principal_id);

CREATE TABLE api_keys (
  id            text PRIMARY KEY,
  principal_id  text NOT NULL REFERENCES service_accounts(id) ON DELETE CASCADE,
  name          text NOT NULL,
  key_hash      text NOT NULL UNIQUE,
  prefix        text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz,
  revoked_at    timestamptz,
  last_used_at  timestamptz
);
CREATE INDEX api_keys_principal ON api_keys(principal_id);

-- Asymmetric keys that sign access tokens. The private half is sealed with the master key.
CREATE TABLE signing_keys (
  kid             text PRIMARY KEY,
  alg             text NOT NULL,
  public_jwk      jsonb NOT NULL,
  sealed_private  text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  retired_at      timestamptz
);

-- Every managed workload resource (agents, functions, models, jobs, sandboxes, volumes, ...)
-- shares one envelope: {metadata, spec, status, events}.
CREATE TABLE resources (
  id            uuid PRIMARY KEY,
  workspace_id  text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  kind          text NOT NULL,
  name          text NOT NULL,
  display_name  text NOT NULL,
  labels        jsonb NOT NULL DEFAULT '{}',
  spec          jsonb NOT NULL DEFAULT '{}',
  status        text NOT NULL,
  state         jsonb NOT NULL DEFAULT '{}',
  events        jsonb NOT NULL DEFAULT '[]',
  generation    integer NOT NULL DEFAULT 1,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  created_by    text,
  updated_by    text,
  UNIQUE (workspace_id, kind, name)
);
`;
