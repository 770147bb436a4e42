export const name = '005_jobs';

// One row per job execution and one per task. Task rows are the durable record of what ran: the
// execution workflow's activities read them before running a task, so a task that finished
// before a worker died is never run again, and the API answers GETs from here without asking
// Temporal. `code_dir` pins the job's code at the time the execution was created. Executions
// belong to the job's resource id, so a job deleted and created again starts with none.
export const sql = `
CREATE TABLE job_executions (
  id              uuid PRIMARY KEY,
  workspace_id    text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  job_id          uuid NOT NULL,
  job_name        text NOT NULL,
  execution_id    text NOT NULL,
  status          text NOT NULL,
  settings        jsonb NOT NULL,
  code_dir        text NOT NULL,
  task_count      integer NOT NULL,
  created_by      text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  started_at      timestamptz,
  completed_at    timestamptz,
  UNIQUE (job_id, execution_id)
);
CREATE INDEX job_executions_by_job ON job_executions (job_id, created_at DESC);

CREATE TABLE job_tasks (
  execution_id    uuid NOT NULL REFERENCES job_executions(id) ON DELETE CASCADE,
  index           integer NOT NULL,
  arguments       jsonb NOT NULL,
  status          text NOT NULL DEFAULT 'pending',
  retries         integer NOT NULL DEFAULT 0,
  attempt         integer NOT NULL DEFAULT 0,
  reason          text,
  seconds         double precision NOT NULL DEFAULT 0,
  conditions      jsonb NOT NULL DEFAULT '[]',
  started_at      timestamptz,
  completed_at    timestamptz,
  PRIMARY KEY (execution_id, index)
);
`;
