export const name = '022_job_execution_nodes';

// The node an execution's tasks run on, chosen by its workflow (domain/nodes/placement.ts) and
// changed when that node is lost. Executions from before placement have none: they ran on the
// node of the API that started them.
export const sql = `
ALTER TABLE job_executions ADD COLUMN node_id text;
`;
