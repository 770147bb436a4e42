import { DEPLOYMENT_WORKFLOW_TYPE } from '../../../../domain/workloads/deployment-start';
import { deployment } from '../../../../workflows/deployment';

// control-plane/ starts the deployment workflow by its type name (it may not import workflows/):
// the name must stay the one Temporal registers, the workflow function's own.
test('the deployment workflow is started under the name its function is registered by', () => {
  expect(deployment.name).toBe(DEPLOYMENT_WORKFLOW_TYPE);
});
