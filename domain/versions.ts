/**
 * The API version registry: one row per released version. Adding a version is one row here plus
 * the response differences keyed on `request.apiVersion` where they apply.
 */
export interface ApiVersion {
  version: string;
  released: string;
  status: 'stable' | 'preview' | 'deprecated';
}

export const API_VERSIONS: readonly ApiVersion[] = [
  { version: '2026-04-16', released: '2026-04-16', status: 'stable' },
  // What the reference SDK (@blaxel/core 0.3.21) announces by default. Its shapes are those of
  // 2026-04-16: accepting it lets that SDK run unchanged, and a later difference keys on it.
  { version: '2026-04-28', released: '2026-04-28', status: 'stable' },
];

/** Clients that send no Service-Version get the earliest stable version, so they never break. */
export const DEFAULT_API_VERSION = API_VERSIONS.filter((v) => v.status === 'stable')
  .map((v) => v.version)
  .sort()[0];

const VERSION_FORMAT = /^(\d{4})-(\d{2})-(\d{2})(\.preview)?$/;

export type VersionResolution = { ok: true; version: string } | { ok: false; message: string };

function isCalendarDate(year: number, month: number, day: number): boolean {
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

export function validVersionsText(): string {
  return API_VERSIONS.map((v) => v.version).join(', ');
}

/** Resolves the Service-Version header value (undefined when absent) to a registered version. */
export function resolveApiVersion(header: string | undefined): VersionResolution {
  if (header === undefined) return { ok: true, version: DEFAULT_API_VERSION };
  const value = header.trim();
  const shown = JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}...` : value);
  const match = VERSION_FORMAT.exec(value);
  if (!match || !isCalendarDate(Number(match[1]), Number(match[2]), Number(match[3]))) {
    return {
      ok: false,
      message: `Service-Version ${shown} is not a valid version: expected YYYY-MM-DD or YYYY-MM-DD.preview. Valid versions: ${validVersionsText()}.`,
    };
  }
  if (!API_VERSIONS.some((v) => v.version === value)) {
    return { ok: false, message: `Service-Version ${shown} is not supported. Valid versions: ${validVersionsText()}.` };
  }
  return { ok: true, version: value };
}
