import type { GroupDimension } from './metrics-query';

/** Fields of an AccountMetricsDataEntry, each carrying the value of one dimension. */
export type EntryField = 'workspace' | 'resourceType' | 'resourceName' | 'resourceUuid' | 'billingDimension';

interface EntryFieldRule {
  field: EntryField;
  dimension: GroupDimension;
  /** Grouped dimensions that make this field appear (its own, plus those it enriches). */
  populatedBy: readonly GroupDimension[];
}

/** The AccountMetricsDataEntry table of service-interface.md. */
export const ENTRY_FIELDS: readonly EntryFieldRule[] = [
  { field: 'workspace', dimension: 'workspace', populatedBy: ['workspace', 'resource_uuid', 'resource_name'] },
  {
    field: 'resourceType',
    dimension: 'resource_type',
    populatedBy: ['resource_type', 'resource_uuid', 'resource_name', 'billing_dimension'],
  },
  { field: 'resourceName', dimension: 'resource_name', populatedBy: ['resource_name', 'resource_uuid'] },
  { field: 'resourceUuid', dimension: 'resource_uuid', populatedBy: ['resource_uuid'] },
  { field: 'billingDimension', dimension: 'billing_dimension', populatedBy: ['billing_dimension'] },
];

/** Fields shown for a grouping that are not themselves grouped: filled from the data (enrichment). */
export function enrichmentFields(groupBy: readonly GroupDimension[]): EntryFieldRule[] {
  return ENTRY_FIELDS.filter(
    (rule) => !groupBy.includes(rule.dimension) && rule.populatedBy.some((dimension) => groupBy.includes(dimension)),
  );
}

export function fieldOf(dimension: GroupDimension): EntryField {
  return ENTRY_FIELDS.find((rule) => rule.dimension === dimension)!.field;
}

/** Usage is reported only when every group has a single unit, that is when billing_dimension is grouped. */
export function reportsUsage(groupBy: readonly GroupDimension[]): boolean {
  return groupBy.includes('billing_dimension');
}
