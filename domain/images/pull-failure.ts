/**
 * Why an image could not be pulled, read from what skopeo printed. The kinds are what a caller
 * acts on (fix the name, the credentials, or the registry's address); the reason is skopeo's
 * own words, so nothing it said is lost.
 */
export type PullFailureKind = 'not_found' | 'unauthorized' | 'unreachable' | 'failed';

export interface PullFailure {
  kind: PullFailureKind;
  reason: string;
}

const KINDS: [PullFailureKind, RegExp][] = [
  ['unauthorized', /unauthorized|authentication required|invalid username\/password|access denied|denied:/i],
  ['not_found', /manifest unknown|name unknown|not found|repository name not known|no image found/i],
  ['unreachable', /connection refused|no such host|i\/o timeout|network is unreachable|dial tcp|server gave HTTP response to HTTPS client|certificate/i],
];

/** The failure behind skopeo's standard error (its last `msg="..."`, unquoted, or its last line). */
export function pullFailure(stderr: string): PullFailure {
  const reason = skopeoMessage(stderr);
  const kind = KINDS.find(([, pattern]) => pattern.test(reason))?.[0] ?? 'failed';
  return { kind, reason };
}

function skopeoMessage(stderr: string): string {
  const lines = stderr.split('\n').map((line) => line.trim()).filter(Boolean);
  for (const line of lines.reverse()) {
    const quoted = /msg="((?:[^"\\]|\\.)*)"/.exec(line);
    if (quoted) return quoted[1].replace(/\\(.)/g, '$1');
  }
  return lines[0] ?? 'skopeo failed without a message';
}

const WHAT_HAPPENED: Record<PullFailureKind, string> = {
  not_found: 'was not found in its registry',
  unauthorized: 'was refused by its registry (credentials missing or wrong)',
  unreachable: 'could not be pulled: its registry could not be reached',
  failed: 'could not be pulled',
};

/** A pull that failed: the message names the image, what happened and skopeo's reason. */
export class ImagePullError extends Error {
  readonly kind: PullFailureKind;
  readonly reason: string;

  constructor(
    readonly reference: string,
    failure: PullFailure,
  ) {
    super(`image '${reference}' ${WHAT_HAPPENED[failure.kind]}: ${failure.reason}`);
    this.name = 'ImagePullError';
    this.kind = failure.kind;
    this.reason = failure.reason;
  }
}
