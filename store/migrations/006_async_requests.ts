export const name = '006_async_requests';

// Asynchronous agent requests (`?async=true`): the row is the durable copy of the request (body
// included, bounded by the gateway) and, once the agent answered, of its result; the request's
// workflow reads and writes it, the gateway answers GETs from it without asking Temporal. Rows
// belong to the workspace, not to the agent's resource, so a request outlives its agent's
// deletion with a recorded failure. A workspace's callback signing secret is sealed with the
// master key; admins read and rotate it through the management API.
export const sql = `
CREATE TABLE agent_requests (
  id                     uuid PRIMARY KEY,
  workspace_id           text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  agent_id               uuid NOT NULL,
  agent_name             text NOT NULL,
  status                 text NOT NULL DEFAULT 'queued',
  path                   text NOT NULL,
  headers                jsonb NOT NULL,
  body                   bytea NOT NULL,
  callback_url           text,
  callback_status        text,
  callback_error         text,
  response_status        integer,
  response_content_type  text,
  response_body          bytea,
  error                  text,
  attempts               integer NOT NULL DEFAULT 0,
  created_by             text,
  created_at             timestamptz NOT NULL DEFAULT now(),
  started_at             timestamptz,
  completed_at           timestamptz,
  callback_at            timestamptz
);
CREATE INDEX agent_requests_by_agent ON agent_requests (agent_id, created_at DESC);

CREATE TABLE workspace_callback_secrets (
  workspace_id   text PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
  sealed_secret  text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now()
);
`;
