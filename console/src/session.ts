/**
 * Where the console keeps the member's token: sessionStorage only. It lasts as long as the
 * tab, is never written to localStorage or a cookie (a cookie would be sent by the browser
 * on its own, to any request another page makes to this server). A sign-in link (`team
 * console`) carries it in the URL's fragment, which a browser never sends to any server: it
 * is taken into the tab's storage and removed from the address bar (and so from the history)
 * before anything else runs.
 */
const TOKEN_KEY = "team-protocols.token";

export function storedToken(): string | undefined {
  return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
}

export function storeToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token);
}

/** Signing out: the token is gone from the tab. */
export function forgetToken(): void {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** A sign-in link's `#token=…`: kept for this tab, and gone from the address bar at once. */
export function takeTokenFromLink(): void {
  const link = /^#token=([^&]+)$/.exec(location.hash);
  if (!link?.[1]) return;
  history.replaceState(null, "", `${location.pathname}${location.search}`);
  storeToken(decodeURIComponent(link[1]));
}
