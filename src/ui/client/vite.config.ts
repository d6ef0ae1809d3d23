import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = (relative: string) => fileURLToPath(new URL(relative, import.meta.url));

/**
 * Builds the web UI and the GraphQL playground into dist/ui, served by src/ui/serveUi.ts under /ui/. Everything the
 * pages load is bundled here (GraphiQL with its CSS and Monaco workers, React, uPlot): nothing comes from a CDN.
 */
export default defineConfig({
  root: here('.'),
  base: '/ui/',
  logLevel: 'warn',
  publicDir: false,
  oxc: { jsx: { runtime: 'automatic', importSource: 'react' } },
  build: {
    outDir: here('../../../dist/ui'),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    chunkSizeWarningLimit: 5000,
    reportCompressedSize: false,
    rollupOptions: {
      input: { index: here('index.html'), playground: here('playground.html') },
      onLog(level, log, handler) {
        // framer-motion (a GraphiQL dependency) marks modules "use client"; meaningless in a client-only bundle.
        if (log.code === 'MODULE_LEVEL_DIRECTIVE') return;
        handler(level, log);
      },
    },
  },
  worker: { format: 'es' },
});
