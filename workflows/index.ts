// Every workflow the control worker runs is exported from here (the worker bundles this file).
export * from './usage-flush';
export * from './sandbox-lifecycle';
export * from './port-callback';
export * from './provisioning';
export * from './job-execution';
export * from './deployment';
export * from './volume-lifecycle';
export * from './agent-request';
export * from './custom-domain-lifecycle';
export * from './snapshot-lifecycle';
export * from './image-build';
export * from './node-loss-watch';
export * from './image-pull';
