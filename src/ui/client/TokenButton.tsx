import { useState } from 'react';
import { PageTitle } from './components.js';
import { getToken, setToken } from './token.js';

/** Sets or clears the API token; reloading applies it to every view and the live connection at once. */
export function TokenButton() {
  const [open, setOpen] = useState(false);
  const [value, setValue] = useState('');
  const hasToken = getToken() !== null;
  if (!open) {
    return (
      <button type="button" className="token-button" onClick={() => setOpen(true)}>
        {hasToken ? 'API token ✓' : 'API token'}
      </button>
    );
  }
  return (
    <form
      className="token-form"
      onSubmit={(e) => {
        e.preventDefault();
        setToken(value.trim() || null);
        location.reload();
      }}
    >
      <label>
        API token{' '}
        <input
          type="password"
          autoComplete="off"
          value={value}
          onChange={(e) => setValue(e.target.value)}
          // biome-ignore lint/a11y/noAutofocus: the form appears only when the user asked to enter a token; focus goes where they type.
          autoFocus
        />
      </label>
      <button type="submit">Save</button>
      {hasToken && (
        <button
          type="button"
          onClick={() => {
            setToken(null);
            location.reload();
          }}
        >
          Forget
        </button>
      )}
      <button type="button" onClick={() => setOpen(false)}>
        Cancel
      </button>
    </form>
  );
}

/**
 * The sign-in step of a server that requires API tokens: shown instead of the views until a token is accepted (the
 * views would otherwise say there is nothing, which is not true).
 */
export function SignIn({ refused }: { refused: boolean }) {
  const [value, setValue] = useState('');
  return (
    <section className="panel sign-in" aria-labelledby="sign-in-title">
      <PageTitle>Sign in</PageTitle>
      <h2 id="sign-in-title">Sign in with an API token</h2>
      <p>
        {refused
          ? 'The server refused the saved token (unknown, expired or revoked). Enter another one.'
          : 'This rollplane server requires an API token. Enter yours to see the rollouts, the fleet and the live feed.'}
      </p>
      <p className="muted small">
        The first start printed the admin token; create others with <code>rollplane token create NAME --role viewer</code>. The token is kept in this browser
        only.
      </p>
      <form
        className="token-form"
        onSubmit={(e) => {
          e.preventDefault();
          if (!value.trim()) return;
          setToken(value.trim());
          location.reload();
        }}
      >
        <label>
          API token <input type="password" autoComplete="off" value={value} onChange={(e) => setValue(e.target.value)} />
        </label>
        <button type="submit">Sign in</button>
        {refused && (
          <button
            type="button"
            onClick={() => {
              setToken(null);
              location.reload();
            }}
          >
            Forget the saved token
          </button>
        )}
      </form>
    </section>
  );
}
