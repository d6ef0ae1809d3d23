/**
 * The web UI's entry point (index.html loads it; Vite bundles it): the shared UI (src/ui/client) started with the
 * registered kinds' views (src/kinds/ui.ts). It lives outside both, as src/rollplane.ts does for the CLI (ADR 0045),
 * because the kinds' views import the shared UI, which therefore cannot import them back (ADR 0052).
 */
import { KIND_UIS } from './kinds/ui.js';
import { startUi } from './ui/client/main.js';

startUi(KIND_UIS);
