import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { GraphiQL } from 'graphiql';
import 'graphiql/setup-workers/vite';
import 'graphiql/style.css';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { GRAPHQL_PATH } from './api.js';
import { LiveConnection } from './live.js';
import { authorizationHeader } from './token.js';
import './playground.css';

/**
 * GraphiQL, bundled with Monaco and its workers (nothing from a CDN). Queries and mutations go over HTTP POST with a
 * JSON body (which Apollo's CSRF prevention accepts); subscriptions over graphql-ws on the same path.
 * `#query=…&variables=…` in the URL opens with that operation (shareable links).
 */
const live = new LiveConnection();
// The UI's API token (if set) authenticates HTTP and WebSocket alike; the Headers tab can still override it.
const fetcher = createGraphiQLFetcher({ url: GRAPHQL_PATH, wsClient: live.client, headers: authorizationHeader() });

const params = new URLSearchParams(location.hash.replace(/^#/, ''));
const initialQuery = params.get('query') ?? undefined;
const initialVariables = params.get('variables') ?? undefined;

const DEFAULT_QUERY = `# rollplane GraphQL playground. Ctrl-Enter runs the operation; the Docs button browses the schema.
query Overview {
  serverInfo { version kubeMode lastEventId }
  rollouts(first: 5) {
    totalCount
    edges { node { id kind state toVersion progress { percent } } }
  }
}

# Subscriptions run over WebSocket; pass the last event id you saw as "after" to resume.
subscription Feed {
  events(after: "0") { id type rolloutId object { namespace name } payload createdAt }
}
`;

/**
 * GraphiQL marks each operation tab's <li> as the `tab` while the buttons inside it (select, close) are what is
 * focused: interactive controls nested in an interactive element (axe nested-interactive). The select button becomes
 * the tab and the <li> a plain list item; re-applied whenever GraphiQL re-renders the tabs.
 */
function fixTabRoles(root: ParentNode): void {
  for (const item of root.querySelectorAll<HTMLElement>('li.graphiql-tab[role="tab"]')) {
    const button = item.querySelector<HTMLElement>('button.graphiql-tab-button');
    if (!button) continue;
    button.setAttribute('role', 'tab');
    button.setAttribute('aria-selected', item.getAttribute('aria-selected') ?? 'false');
    item.setAttribute('role', 'presentation');
    item.removeAttribute('aria-selected');
  }
}
new MutationObserver(() => fixTabRoles(document)).observe(document.body, {
  subtree: true,
  childList: true,
  attributes: true,
  attributeFilter: ['role', 'aria-selected'],
});

createRoot(document.getElementById('playground')!).render(
  <StrictMode>
    <GraphiQL fetcher={fetcher} defaultQuery={DEFAULT_QUERY} {...(initialQuery ? { initialQuery } : {})} {...(initialVariables ? { initialVariables } : {})}>
      <GraphiQL.Logo>
        <a href="/" className="playground-home">
          rollplane
        </a>
      </GraphiQL.Logo>
    </GraphiQL>
  </StrictMode>,
);
