import { bundleWorkflowCode, type WorkerOptions } from '@temporalio/worker';
import fs from 'node:fs';
import path from 'node:path';

/** The workflows' entry point, compiled or in sources alike. */
export const WORKFLOWS_ENTRY = require.resolve('../workflows');

/** Where the build leaves the control worker's workflow bundle. */
export const BUILT_WORKFLOW_BUNDLE = path.join(path.dirname(WORKFLOWS_ENTRY), '..', 'workflows.bundle.js');

/**
 * Bundles the workflows (webpack, a few seconds of CPU) into `file`, once, so that worker starts
 * do not each pay for it: the build does this for `npm start`, the test set-up once per run.
 */
export async function writeWorkflowBundle(file: string): Promise<void> {
  const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_ENTRY, logger: quietLogger });
  const staging = `${file}.${process.pid}`;
  fs.writeFileSync(staging, code);
  fs.renameSync(staging, file);
}

/**
 * The worker option that names the workflow code: the prebuilt bundle when it is newer than
 * every compiled file it is made of, else the entry point (bundled at start, as a fallback for a
 * build that skipped the bundling step).
 */
export function workflowCode(bundleFile: string = BUILT_WORKFLOW_BUNDLE, compiledRoot: string = path.dirname(bundleFile)): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  const built = fs.statSync(bundleFile, { throwIfNoEntry: false });
  if (built && !newerThan(compiledRoot, built.mtimeMs, bundleFile)) return { workflowBundle: { codePath: bundleFile } };
  return { workflowsPath: WORKFLOWS_ENTRY };
}

/**
 * The compiled folders workflow code is made of: the workflows and what the floor rules let them
 * import at run time (.dependency-cruiser.js, workflows-do-no-io): domain/ and the agent's contract.
 */
const WORKFLOW_SOURCES = ['workflows', 'domain', path.join('sandbox-agent', 'contract')];

/** Whether a compiled file of the workflows or of what they import changed after `mtimeMs`. */
function newerThan(root: string, mtimeMs: number, except: string): boolean {
  for (const folder of WORKFLOW_SOURCES) {
    const dir = path.join(root, folder);
    // A folder the build did not produce has nothing newer (and must not stop the worker).
    if (!fs.existsSync(dir)) continue;
    for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !/\.[jt]s$/.test(entry.name)) continue;
      const file = path.join(entry.parentPath, entry.name);
      if (file !== except && fs.statSync(file).mtimeMs > mtimeMs) return true;
    }
  }
  return false;
}

const quiet = () => undefined;
const quietLogger = { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: quiet, error: (message: string) => console.error(message) };
