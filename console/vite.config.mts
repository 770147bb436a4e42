import { defineConfig } from 'vite';

/**
 * The console compiles to dist/console and is served by the management API under /console/
 * (api/console). Preact's JSX runtime, no plugins: the build stays a few seconds.
 */
export default defineConfig({
  root: import.meta.dirname,
  base: '/console/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: '../dist/console',
    emptyOutDir: true,
    // Sizes are reported by the benchmark (bench/console/billing-load.ts); no gzip pass here.
    reportCompressedSize: false,
    chunkSizeWarningLimit: 600,
  },
  logLevel: 'warn',
});
