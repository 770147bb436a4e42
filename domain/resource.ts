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

/**
 * Gateways LISTEN here and drop their cached routes of what is sent: a resource id (its status or
 * state changed, or it was deleted: ResourceStore announces each), a route key (a name or host
 * newly claimed) or an integration connection id (its secrets changed or it was
 * deleted).
 */
export const ROUTES_CHANNEL = 'hangar_routes';
