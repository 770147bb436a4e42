export const name = '015_sandbox_previews';

// Previews of a sandbox's ports and their tokens. A preview belongs to the sandbox's resource row
// (gone with it); `label` is the `{preview_id}` of its URL, unique platform-wide because the
// preview host routes by it alone. Tokens are found by the SHA-256 digest of their value; the value
// itself is kept sealed with the master key because the reference lists tokens with their values
// (its SDK's sessions read them back from the list).
export const sql = `
CREATE TABLE sandbox_previews (
  id            uuid PRIMARY KEY,
  workspace_id  text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  sandbox_id    uuid NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
  name          text NOT NULL,
  display_name  text NOT NULL,
  label         text NOT NULL UNIQUE,
  spec          jsonb NOT NULL,
  expires_at    timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  created_by    text,
  updated_by    text,
  UNIQUE (sandbox_id, name)
);
CREATE TABLE sandbox_preview_tokens (
  id            uuid PRIMARY KEY,
  preview_id    uuid NOT NULL REFERENCES sandbox_previews(id) ON DELETE CASCADE,
  name          text NOT NULL,
  digest        text NOT NULL UNIQUE,
  sealed_token  text NOT NULL,
  expires_at    timestamptz NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  UNIQUE (preview_id, name)
);
`;
