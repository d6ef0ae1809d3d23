import { useEffect, useRef } from 'react';
import { Charts } from './Charts.js';
import { Clusters } from './Clusters.js';
import { Dashboard } from './Dashboard.js';
import { Fleet } from './Fleet.js';
import { History } from './History.js';
import { Notifications } from './Notifications.js';
import { useHashRoute, useLive, useLiveStore } from './hooks.js';
import { RolloutDetail } from './RolloutDetail.js';
import { SignIn, TokenButton } from './TokenButton.js';
import { getToken } from './token.js';

const NAV = [
  { href: '#/', label: 'Rollouts & feed', view: '' },
  { href: '#/fleet', label: 'Fleet', view: 'fleet' },
  { href: '#/clusters', label: 'Clusters', view: 'clusters' },
  { href: '#/charts', label: 'Charts', view: 'charts' },
  { href: '#/history', label: 'History', view: 'history' },
  { href: '#/notifications', label: 'Notifications', view: 'notifications' },
] as const;

const CONNECTION_TEXT = { connecting: 'Connecting…', live: 'Live', reconnecting: 'Reconnecting…' } as const;

export function App() {
  const route = useHashRoute();
  const live = useLive();
  const store = useLiveStore();
  const view = route[0] ?? '';
  const main = useRef<HTMLElement>(null);
  // The server refused the (missing or revoked) token: nothing below can load, so ask for one first instead of
  // showing empty views ("No rollouts yet") that are not true.
  const signInNeeded = live.errors.some((e) => e.includes('UNAUTHENTICATED'));

  // Moving between views moves focus to the new content, as a page load would for keyboard and screen-reader users
  // (but not on the first render: the page starts at the top, with the skip link first).
  const routeKey = `${view}/${route[1] ?? ''}`;
  const shownRoute = useRef(routeKey);
  useEffect(() => {
    if (shownRoute.current === routeKey) return;
    shownRoute.current = routeKey;
    main.current?.focus();
  }, [routeKey]);

  return (
    <>
      {/* biome-ignore lint/a11y/useValidAnchor: a skip link is an anchor by convention; the hash router would take #main for a route, so the click focuses <main> itself. */}
      <a
        className="skip-link"
        href="#main"
        onClick={(e) => {
          e.preventDefault();
          main.current?.focus();
        }}
      >
        Skip to content
      </a>
      <header className="topbar">
        <span className="brand">rollplane</span>
        <nav aria-label="Main">
          <ul>
            {/* Notifications are an admin's: other roles are not offered the page. */}
            {NAV.filter((item) => item.view !== 'notifications' || live.server?.caller.role === 'admin').map((item) => (
              <li key={item.view}>
                <a href={item.href} aria-current={view === item.view || (item.view === 'history' && view === 'rollouts') ? 'page' : undefined}>
                  {item.label}
                </a>
              </li>
            ))}
            <li>
              <a href="/graphql">GraphQL playground</a>
            </li>
          </ul>
        </nav>
        <span className={`connection connection-${live.connection}`} role="status" aria-live="polite" data-connection={live.connection}>
          {CONNECTION_TEXT[live.connection]}
        </span>
        {live.server && (
          <span className="server muted small" title={`started ${live.server.startedAt}`}>
            v{live.server.version} · {live.server.kubeMode}
            {live.server.caller.name !== 'anonymous' && ` · ${live.server.caller.name} (${live.server.caller.role})`}
          </span>
        )}
        <TokenButton />
      </header>
      {live.errors.length > 0 && !signInNeeded && (
        <div className="banner error" role="alert">
          {live.errors[live.errors.length - 1]}
          {live.errors.some((e) => e.includes('UNAUTHENTICATED')) && ' — this server requires an API token: set one with “API token” above.'}{' '}
          <button type="button" onClick={() => store.dismissErrors()}>
            Dismiss
          </button>
        </div>
      )}
      <main id="main" ref={main} tabIndex={-1}>
        {signInNeeded && <SignIn refused={getToken() !== null} />}
        {!signInNeeded && view === '' && <Dashboard />}
        {!signInNeeded && view === 'fleet' && <Fleet />}
        {!signInNeeded && view === 'clusters' && <Clusters />}
        {!signInNeeded && view === 'charts' && <Charts />}
        {!signInNeeded && view === 'history' && <History />}
        {!signInNeeded && view === 'rollouts' && route[1] && <RolloutDetail key={route[1]} id={route[1]} />}
        {!signInNeeded && view === 'notifications' && <Notifications />}
        {!['', 'fleet', 'clusters', 'charts', 'history', 'rollouts', 'notifications'].includes(view) && (
          <p>
            No such view. <a href="#/">Back to the dashboard</a>
          </p>
        )}
      </main>
    </>
  );
}
