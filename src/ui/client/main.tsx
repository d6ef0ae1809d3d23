import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App.js';
import { LiveContext } from './hooks.js';
import { LiveConnection } from './live.js';
import { LiveStore } from './LiveStore.js';
import './styles.css';

const connection = new LiveConnection();
const store = new LiveStore(connection);
void store.start();

/** For operators and the browser tests: drop the live connection as a network failure would. */
(window as unknown as { rollplane: unknown }).rollplane = { dropConnection: () => connection.drop(), store };

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <LiveContext.Provider value={{ store, connection }}>
      <App />
    </LiveContext.Provider>
  </StrictMode>,
);
