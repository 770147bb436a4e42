/** Status shared by every workload kind. Normal flow: UPLOADING -> BUILDING -> DEPLOYING -> DEPLOYED | FAILED. */
export const RESOURCE_STATUSES = [
  'UPLOADING',
  'BUILDING',
  'BUILT',
  'DEPLOYING',
  'DEPLOYED',
  'FAILED',
  'DEACTIVATING',
  'DEACTIVATED',
  'TERMINATED',
  'DELETING',
] as const;
export type ResourceStatus = (typeof RESOURCE_STATUSES)[number];

/** One line of a resource's short history, so users can see why a deployment failed. */
export interface ResourceEvent {
  type: 'Normal' | 'Warning';
  status: ResourceStatus;
  message: string;
  time: string;
}

/** Events kept per resource; older ones fall off. */
export const MAX_RESOURCE_EVENTS = 20;
