import { formatTable } from '../../domain/text-table';

export const OUTPUTS = ['table', 'json'] as const;
export type OutputFormat = (typeof OUTPUTS)[number];

type Item = Record<string, unknown>;

function at(item: Item, ...paths: string[]): string {
  for (const path of paths) {
    let value: unknown = item;
    for (const key of path.split('.')) value = value && typeof value === 'object' ? (value as Item)[key] : undefined;
    if (value !== undefined && value !== null && typeof value !== 'object') return String(value);
  }
  return '';
}

/**
 * The columns every kind shares, read from whichever shape it has: the resource envelope
 * (metadata/status), or the flatter shapes of images, snapshots, connections and nodes.
 */
export function row(item: Item): string[] {
  return [
    at(item, 'metadata.name', 'name', 'id'),
    at(item, 'status.status', 'status', 'state', 'metadata.status'),
    at(item, 'status.state', 'spec.integration', 'sourceSandbox', 'region'),
    at(item, 'metadata.updatedAt', 'updatedAt', 'metadata.createdAt', 'createdAt', 'lastHeartbeatAt'),
  ];
}

export const HEADER = ['NAME', 'STATUS', 'DETAIL', 'UPDATED'];

export function renderItems(items: Item[], format: OutputFormat): string {
  if (format === 'json') return JSON.stringify(items, null, 2);
  return formatTable(HEADER, items.map(row));
}

export function renderItem(item: Item, format: OutputFormat): string {
  if (format === 'json') return JSON.stringify(item, null, 2);
  return formatTable(HEADER, [row(item)]);
}
