import { GROUP_FIELDS, RESOLUTIONS, type GroupField, type MetricsQuery } from './metrics';

const FIELD_NAMES: Record<GroupField, string> = {
  resource_type: 'resource type',
  billing_dimension: 'billing dimension',
  workspace: 'workspace',
  resource_name: 'resource',
  resource_uuid: 'resource uuid',
};

/** The date part of an RFC 3339 time, for a date input. */
const dateOf = (time: string) => time.slice(0, 10);

/** Window, resolution, grouping and page size: the metrics API's own controls. */
export function BillingControls({ query, onChange }: { query: MetricsQuery; onChange: (q: MetricsQuery) => void }) {
  const [primary, ...others] = query.groupBy;
  const byDimension = query.groupBy.includes('billing_dimension');
  const setPrimary = (field: GroupField) => onChange({ ...query, groupBy: [field, ...others.filter((f) => f !== field)] });
  const setByDimension = (on: boolean) =>
    onChange({ ...query, groupBy: on ? [...query.groupBy, 'billing_dimension'] : query.groupBy.filter((f) => f !== 'billing_dimension' || f === primary) });
  return (
    <form class="controls" onSubmit={(e) => e.preventDefault()} aria-label="Billing query">
      <label>
        From (UTC)
        <input type="date" name="start" value={dateOf(query.startTime)} onChange={(e) => onChange({ ...query, startTime: `${(e.target as HTMLInputElement).value}T00:00:00Z` })} />
      </label>
      <label>
        To, exclusive (UTC)
        <input type="date" name="end" value={dateOf(query.endTime)} onChange={(e) => onChange({ ...query, endTime: `${(e.target as HTMLInputElement).value}T00:00:00Z` })} />
      </label>
      <label>
        Resolution
        <select name="resolution" value={query.resolution} onChange={(e) => onChange({ ...query, resolution: (e.target as HTMLSelectElement).value as MetricsQuery['resolution'] })}>
          {RESOLUTIONS.map((r) => (
            <option value={r}>{r}</option>
          ))}
        </select>
      </label>
      <label>
        Group by
        <select name="groupBy" value={primary} onChange={(e) => setPrimary((e.target as HTMLSelectElement).value as GroupField)}>
          {GROUP_FIELDS.map((f) => (
            <option value={f}>{FIELD_NAMES[f]}</option>
          ))}
        </select>
      </label>
      <label>
        <input type="checkbox" name="byDimension" checked={byDimension} disabled={primary === 'billing_dimension'} onChange={(e) => setByDimension((e.target as HTMLInputElement).checked)} /> and
        by billing dimension (usage in its unit)
      </label>
      <label>
        Groups per page
        <select name="limit" value={String(query.limit)} onChange={(e) => onChange({ ...query, limit: Number((e.target as HTMLSelectElement).value) })}>
          {[...new Set([10, 25, 50, 100, query.limit])].sort((a, b) => a - b).map((n) => (
            <option value={String(n)}>{n}</option>
          ))}
        </select>
      </label>
    </form>
  );
}

export { FIELD_NAMES };
