/**
 * The headers every console file is served with. The console is a single-page app whose only
 * secret is the member's token, kept in sessionStorage: the policy below makes sure no script
 * but the bundle this server serves can run in its page (an injected one could read the
 * token), that the page talks to no other host, and that no other site can frame it.
 */

/**
 * - `default-src 'self'` and the explicit -src lines: the bundle, its stylesheet and its
 *   icon, from this origin only; no inline script or style, no eval (nothing says
 *   'unsafe-inline' or 'unsafe-eval').
 * - `connect-src 'self'`: fetch (the RPCs) only to this origin; a token cannot be sent away.
 * - `require-trusted-types-for 'script'`: the DOM's HTML sinks (innerHTML and the like) refuse
 *   strings; the console renders text through preact, which never uses them.
 * - `object-src`, `base-uri`, `form-action 'none'`: no plugins, no <base> to re-point the
 *   bundle's URL, and no form submission, which would put the token field in a URL if a
 *   script failed to take the submit event.
 * - `frame-ancestors 'none'`: no site can frame the console to click its buttons (clickjacking).
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
].join("; ");

export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  // A file is what its content-type says, never what a browser guesses from its bytes.
  "x-content-type-options": "nosniff",
  // The console's URL never leaves in a Referer (it holds no token, but says where it runs).
  "referrer-policy": "no-referrer",
  // frame-ancestors' predecessor, for browsers that know only it.
  "x-frame-options": "DENY",
  // No window another site opened keeps a handle on the console's.
  "cross-origin-opener-policy": "same-origin",
  // Other sites cannot embed these files (e.g. load the bundle with a <script> tag).
  "cross-origin-resource-policy": "same-origin",
  "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
  // The files change with the server (the bundle is committed): revalidate every load
  // (the ETag makes that a 304).
  "cache-control": "no-cache",
};
