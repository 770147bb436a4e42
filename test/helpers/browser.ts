import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { repoRoot } from '../../scripts/stack/binaries';

/** Debian's chromium (scripts/install-deps.sh): playwright-core drives it, it never downloads a browser. */
export const CHROMIUM = '/usr/bin/chromium';

/** Quiet and self-contained: no GPU, no QUIC, nothing fetched in the background, no updates, no sync. */
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export interface TestBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Chromium headless on a fresh profile of its own (its user-data-dir, removed on close). */
export async function launchBrowser(): Promise<TestBrowser> {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run scripts/install-deps.sh (apt-get install chromium)`);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 860 },
    acceptDownloads: true,
  });
  return {
    context,
    close: async () => {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** The console must have been built (npm run build) for the platform to serve it. */
export function requireBuiltConsole(): void {
  if (!fs.existsSync(path.join(repoRoot(), 'dist/console/index.html'))) throw new Error('dist/console is missing: run npm run build first');
}

/** Signs in on the page at `url` (a console address) with an API key, and waits for the console's header. */
export async function signInWithKey(page: Page, url: string, apiKey: string): Promise<void> {
  await page.goto(url);
  await page.getByLabel('API key', { exact: true }).fill(apiKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}
