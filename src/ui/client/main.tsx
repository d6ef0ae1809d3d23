import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App.js';
import { LiveContext } from './hooks.js';
import { KindsContext, type KindUi } from './kindUi.js';
import { LiveConnection } from './live.js';
import { LiveStore } from './LiveStore.js';
import './styles.css';

/** Renders the UI into #root with the given kinds' views (src/webUi.ts passes the registered ones). */
export function startUi(kinds: readonly KindUi[]): void {
  const connection = new LiveConnection();
  const store = new LiveStore(
    connection,
    kinds.flatMap((k) => k.live),
  );
  void store.start();

  /** For operators and the browser tests: drop the live connection as a network failure would. */
  (window as unknown as { rollplane: unknown }).rollplane = { dropConnection: () => connection.drop(), store };

  createRoot(document.getElementById('root')!).render(
    <StrictMode>
      <KindsContext.Provider value={kinds}>
        <LiveContext.Provider value={{ store, connection }}>
          <App />
        </LiveContext.Provider>
      </KindsContext.Provider>
    </StrictMode>,
  );
}
