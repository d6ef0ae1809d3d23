import { useState } from 'react';
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
