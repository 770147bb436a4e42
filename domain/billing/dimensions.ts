/** The billing dimensions of service-interface.md: each bills one resource type in one unit. */
export const RESOURCE_TYPES = ['sandbox', 'agent', 'job', 'mcp_server', 'volume', 'custom_domain'] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

/** gbs = GB-seconds, count = discrete events, hours = active hours. */
export type UsageUnit = 'gbs' | 'count' | 'hours';

export const BILLING_DIMENSIONS = {
  sandbox_compute_runtime_gbs: { resourceType: 'sandbox', unit: 'gbs' },
  sandbox_image_storage_gbs: { resourceType: 'sandbox', unit: 'gbs' },
  sandbox_snapshot_storage_gbs: { resourceType: 'sandbox', unit: 'gbs' },
  agent_compute_runtime_gbs: { resourceType: 'agent', unit: 'gbs' },
  agent_image_storage_gbs: { resourceType: 'agent', unit: 'gbs' },
  agent_async_requests_count: { resourceType: 'agent', unit: 'count' },
  job_compute_runtime_gbs: { resourceType: 'job', unit: 'gbs' },
  job_image_storage_gbs: { resourceType: 'job', unit: 'gbs' },
  mcp_server_compute_runtime_gbs: { resourceType: 'mcp_server', unit: 'gbs' },
  mcp_server_image_storage_gbs: { resourceType: 'mcp_server', unit: 'gbs' },
  volume_storage_gbs: { resourceType: 'volume', unit: 'gbs' },
  custom_domain_active_time_hours: { resourceType: 'custom_domain', unit: 'hours' },
} as const satisfies Record<string, { resourceType: ResourceType; unit: UsageUnit }>;

export type BillingDimension = keyof typeof BILLING_DIMENSIONS;
export const BILLING_DIMENSION_NAMES = Object.keys(BILLING_DIMENSIONS) as BillingDimension[];

export function isBillingDimension(value: string): value is BillingDimension {
  return Object.prototype.hasOwnProperty.call(BILLING_DIMENSIONS, value);
}

export function isResourceType(value: string): value is ResourceType {
  return (RESOURCE_TYPES as readonly string[]).includes(value);
}

export function unitOf(dimension: BillingDimension): UsageUnit {
  return BILLING_DIMENSIONS[dimension].unit;
}
