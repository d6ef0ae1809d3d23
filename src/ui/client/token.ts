/**
 * The API token the UI sends when the server requires authentication (ROLLPLANE_AUTH=on, or a non-loopback HOST).
 * Kept in this browser's localStorage only; sent as `authorization: Bearer …` over HTTP and in graphql-ws's
 * connection_init payload.
 */
const KEY = 'rollplane.apiToken';

export function getToken(): string | null {
  try {
    return localStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function setToken(token: string | null): void {
  if (token) localStorage.setItem(KEY, token);
  else localStorage.removeItem(KEY);
}

export function authorizationHeader(): Record<string, string> {
  const token = getToken();
  return token ? { authorization: `Bearer ${token}` } : {};
}
