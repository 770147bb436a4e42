export const name = '010_agent_threads';

// The thread store agents reach through their platform socket: the turns of each conversation
// (X-Service-Thread-Id), kept per agent, so a thread outlives revisions and restarts and goes
// away with the agent. `seq` orders turns and lets a reader ask for the latest ones cheaply.
export const sql = `
CREATE TABLE agent_thread_messages (
  seq          bigserial PRIMARY KEY,
  agent_id     uuid NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
  thread_id    text NOT NULL,
  role         text NOT NULL,
  content      text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agent_thread_messages_by_thread ON agent_thread_messages (agent_id, thread_id, seq);
`;
