// A Hangar job task: every task of an execution runs this file once, from /app, with its index
// in TASK_INDEX and its arguments (one object of the execution's `tasks` array) in TASK_ARGUMENTS.
// Exit code 0 marks the task succeeded; anything else fails it (and it is retried up to maxRetries).
const index = Number(process.env.TASK_INDEX);
const args = JSON.parse(process.env.TASK_ARGUMENTS || '{}');

// The trivial work: count the words of `text`, or say hello to `name`.
const result = typeof args.text === 'string'
  ? { index, words: args.text.split(/\s+/).filter(Boolean).length }
  : { index, greeting: `hello, ${args.name ?? 'world'}` };

console.log(JSON.stringify(result));
if (args.fail === true) {
  console.error(`task ${index} was asked to fail`);
  process.exit(1);
}
