const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3_600, d: 86_400, w: 604_800 };

export const DURATION_PATTERN = '^[0-9]{1,9}[smhdw]$';

/** Parses durations such as "90s", "15m", "24h", "30d", "2w" into seconds; undefined when malformed. */
export function parseDurationSeconds(text: string): number | undefined {
  const match = /^(\d{1,9})([smhdw])$/.exec(text);
  if (!match) return undefined;
  return Number(match[1]) * UNIT_SECONDS[match[2]];
}
