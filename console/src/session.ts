/**
 * Where the console keeps the member's token: sessionStorage only. It lasts as long as the
 * tab, is never written to localStorage or a cookie (a cookie would be sent by the browser
 * on its own, to any request another page makes to this server), and never appears in a URL.
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
