import fs from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { quietLogger } from '../../helpers/time-skipping';
import { repoRoot } from '../../../scripts/stack/binaries';

/**
 * Replay safety: workflows already running in users' deployments must replay on the new code,
 * command for command. test/fixtures/workflow-histories/ holds histories recorded on earlier code
 * (the scenarios of test/unit/workflows/lifecycle-deadlines.test.ts and a few generated interleavings, run
 * against the workflows as they were before issue 15 split them into steps); each must replay on
 * the workflows as they are. A change that adds, drops or reorders a command fails here with
 * Temporal's nondeterminism error; guard it with patched() instead. To keep a new path covered,
 * record its history into the folder before changing it: handle.fetchHistory(), then
 * History.toObject(history, { longs: String, enums: String, bytes: String }) as JSON
 * (@temporalio/common's historyToJSON fails on this install's two protobufjs versions).
 */

const FIXTURES = path.join(repoRoot(), 'test', 'fixtures', 'workflow-histories');
const histories = fs.readdirSync(FIXTURES).filter((name) => name.endsWith('.json'));

let workflowBundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  workflowBundle = await bundleWorkflowCode({ workflowsPath: require.resolve('../../../workflows'), logger: quietLogger });
}, 120_000);

test('there are recorded histories to replay', () => {
  expect(histories.length).toBeGreaterThan(0);
});

test.each(histories)('%s replays on the current workflows', async (name) => {
  const history = temporal.api.history.v1.History.fromObject(JSON.parse(fs.readFileSync(path.join(FIXTURES, name), 'utf8')));
  await Worker.runReplayHistory({ workflowBundle }, history, name.replace(/\.json$/, ''));
}, 60_000);
