import fc from 'fast-check';
import { PreviewRouteCache } from '../../../../api/gateway/preview-routes';
import type { PreviewRoute, SandboxPreviewStore } from '../../../../store/sandbox-previews';

const LABEL = 'abc';
const PREVIEW_ID = 'preview-1';

/** The preview as the database holds it at `version`: each change adds a token. */
function routeAt(version: number): PreviewRoute {
  return {
    previewId: PREVIEW_ID,
    workspaceId: 'ws',
    workspace: 'w',
    sandboxId: 'sandbox-1',
    sandboxName: 's',
    spec: { port: 8000, public: false },
    expiresAt: undefined,
    tokens: new Map(Array.from({ length: version }, (_, i) => [`digest-${i}`, Number.MAX_SAFE_INTEGER])),
  };
}

describe('PreviewRouteCache', () => {
  test('after every change has been announced, a read gives the latest preview, whatever the order of reads, commits and notices', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), fc.array(fc.constantFrom('read', 'change'), { minLength: 1, maxLength: 8 }), async (s, steps) => {
        let version = 0;
        // A query sees the database as it is when it runs, and answers whenever the schedule says.
        const store = { route: (_label: string) => s.schedule(Promise.resolve(routeAt(version)), 'query answers') } as unknown as SandboxPreviewStore;
        const cache = new PreviewRouteCache(store);
        const work: Promise<unknown>[] = [];
        for (const step of steps) {
          if (step === 'read') {
            work.push(s.schedule(Promise.resolve(), 'request').then(() => cache.get(LABEL)));
          } else {
            // The change commits, then its notice reaches the gateway, each at a moment of its own.
            work.push(s.schedule(Promise.resolve(), 'commit').then(() => {
              version++;
              return s.schedule(Promise.resolve(), 'notice').then(() => cache.forget(PREVIEW_ID));
            }));
          }
        }
        await s.waitAll();
        await Promise.all(work);
        const last = cache.get(LABEL);
        await s.waitAll();
        expect((await last)?.tokens.size).toBe(version);
      }),
      { numRuns: Number(process.env.HANGAR_INTERLEAVING_RUNS ?? 300) },
    );
  });

  test('an unknown label is read again each time: a preview created a moment later answers at once', async () => {
    let exists = false;
    const store = { route: async () => (exists ? routeAt(0) : undefined) } as unknown as SandboxPreviewStore;
    const cache = new PreviewRouteCache(store);
    expect(await cache.get(LABEL)).toBeUndefined();
    exists = true;
    expect(await cache.get(LABEL)).toBeDefined();
  });
});
