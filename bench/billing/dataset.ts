import { BILLING_DIMENSION_NAMES, BILLING_DIMENSIONS, RESOURCE_TYPES, type BillingDimension } from '../../domain/billing/dimensions';

/**
 * The synthetic usage of the benchmark: 2,000 resources of every type in 3 workspaces, each
 * reporting every billing dimension of its type about once an hour for 90 days, in time order
 * (as meters send it). Events are produced as ready JSON text, so generating them costs the load
 * generator little of the CPU it shares with the server.
 */
export const DAYS = 90;
export const RESOURCES = 2_000;
export const WORKSPACES = 3;

// How the 2,000 resources split across types (sums to 1).
const TYPE_SHARE: Record<(typeof RESOURCE_TYPES)[number], number> = {
  sandbox: 0.3,
  agent: 0.2,
  job: 0.15,
  mcp_server: 0.15,
  volume: 0.15,
  custom_domain: 0.05,
};

interface Series {
  /** JSON text of the fields that never change, ready to splice into an event. */
  fixed: string;
  dimension: BillingDimension;
  index: number;
}

export class Dataset {
  readonly series: Series[] = [];
  readonly perHour: number;

  constructor(
    readonly workspaces: string[],
    /** When the data begins (for the load: UTC midnight 90 days before it ends). */
    readonly start: number,
    readonly total: number,
    /** How many hours the events spread over. */
    readonly hours = DAYS * 24,
    /** Ids are `${idPrefix}${k}`. */
    readonly idPrefix = 'b-',
  ) {
    let resource = 0;
    for (const type of RESOURCE_TYPES) {
      const count = Math.round(RESOURCES * TYPE_SHARE[type]);
      const dimensions = BILLING_DIMENSION_NAMES.filter((d) => BILLING_DIMENSIONS[d].resourceType === type);
      for (let i = 0; i < count; i++, resource++) {
        const name = `${type.replace('_', '-')}-${String(i).padStart(4, '0')}`;
        const workspace = workspaces[resource % workspaces.length];
        for (const dimension of dimensions) {
          this.series.push({
            fixed: `"workspace":"${workspace}","resourceType":"${type}","resourceName":"${name}","resourceUuid":"r-${resource}","billingDimension":"${dimension}"`,
            dimension,
            index: this.series.length,
          });
        }
      }
    }
    this.perHour = Math.ceil(total / hours);
  }

  get end(): number {
    return this.start + this.hours * 3_600_000;
  }

  /** Events [from, to) of the run as a request body. */
  body(from: number, to: number): string {
    const parts: string[] = [];
    for (let k = from; k < to; k++) {
      const hour = Math.floor(k / this.perHour);
      const i = k % this.perHour;
      const series = this.series[(hour * this.perHour + i) % this.series.length];
      const second = (i * 7919) % 3600;
      const timestamp = new Date(this.start + hour * 3_600_000 + second * 1000).toISOString();
      parts.push(`{"id":"${this.idPrefix}${k}","timestamp":"${timestamp}",${series.fixed},"quantity":${quantityOf(series, k)}}`);
    }
    return `{"events":[${parts.join(',')}]}`;
  }
}

function quantityOf(series: Series, k: number): number {
  const unit = BILLING_DIMENSIONS[series.dimension].unit;
  if (unit === 'count') return 1 + (k % 20);
  if (unit === 'hours') return 1;
  return ((series.index % 50) + 1) * 3.5 + (k % 7) * 0.25;
}
