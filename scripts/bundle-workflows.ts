import { BUILT_WORKFLOW_BUNDLE, writeWorkflowBundle } from '../workers/workflow-bundle';

// Part of the build: the control worker starts from this bundle instead of bundling at start.
writeWorkflowBundle(BUILT_WORKFLOW_BUNDLE).then(
  () => console.log(`workflows bundled into ${BUILT_WORKFLOW_BUNDLE}`),
  (err) => {
    console.error(`bundling the workflows failed: ${(err as Error).message}`);
    process.exit(1);
  },
);
