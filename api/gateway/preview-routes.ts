import type { PreviewRoute, SandboxPreviewStore } from '../../store/sandbox-previews';

/** A preview's route is trusted this long without news; changes are announced at once besides. */
const TTL_MS = 2_000;
const MAX_ENTRIES = 10_000;

/**
 * The previews the preview host serves, by URL label, cached briefly so a request costs no query
 * in the steady state. Every change of a preview or of its tokens is announced with the preview's
 * id (route notices), which drops it here at once; expiries are compared with the clock on each
 * request by the caller, never cached as a yes.
 */
export class PreviewRouteCache {
  private readonly entries = new Map<string, { route: PreviewRoute; at: number }>();
  /** Counts notices: a read that a notice overtook may hold what the notice undid, so it is not kept. */
  private notices = 0;

  constructor(private readonly store: SandboxPreviewStore) {}

  async get(label: string): Promise<PreviewRoute | undefined> {
    const cached = this.entries.get(label);
    if (cached && Date.now() - cached.at < TTL_MS) return cached.route;
    return this.load(label);
  }

  /** Reads the preview again, whatever is cached (a token just created may not be announced yet). */
  async load(label: string): Promise<PreviewRoute | undefined> {
    const noticesBefore = this.notices;
    const route = await this.store.route(label);
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    // An unknown label is not remembered: a preview created a moment later must answer at once.
    // Nor is a read during which a notice came: it may predate the change the notice announced.
    if (route && this.notices === noticesBefore) this.entries.set(label, { route, at: Date.now() });
    else this.entries.delete(label);
    return route;
  }

  /** A notice about a preview (its id) or anything else: drops the preview it names, if cached. */
  forget(id: string): void {
    this.notices++;
    for (const [label, entry] of this.entries) {
      if (entry.route.previewId === id) this.entries.delete(label);
    }
  }
}
