import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { parseConfig } from "../../server/config.js";
import {
  acceptsGzip,
  CONSOLE_DIST_DIR,
  CONSOLE_FILES,
  loadConsoleAssets,
} from "../../server/http/console-assets.js";
import { openTestDatabase, type TestDatabase } from "../support/databases.js";
import { startTestEnv, type TestEnv, uniqueName } from "../support/harness.js";

/**
 * Issue #18 item 5: what the server shows a browser. Static files only, from a fixed list,
 * with their content types and a strict Content-Security-Policy; no directory listing and no
 * path traversal; cross-origin calls refused unless CONSOLE_ALLOWED_ORIGINS names the origin.
 * These are HTTP-level checks with no database behaviour in them, so they run on the embedded
 * database only; test/process/console-browser.test.ts drives the console itself.
 */

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** One HTTP/1.1 request with the path sent exactly as given (Node's client does not normalise `..`). */
function request(
  url: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${url}/`,
      { method: options.method ?? "GET", path, headers: options.headers ?? {} },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
          }),
        );
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

/** A unary Connect call with JSON, as a page's fetch would make it. */
const rpc = (url: string, method: string, body: unknown, headers: Record<string, string> = {}) =>
  request(url, `/team.v1.TeamService/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });

let testDb: TestDatabase;
let env: TestEnv & { close(): Promise<void> };
let allowing: TestEnv & { close(): Promise<void> };
const ALLOWED = "https://console.example";

beforeAll(async () => {
  testDb = await openTestDatabase("embedded");
  env = await startTestEnv("embedded", testDb);
  allowing = await startTestEnv("embedded", testDb, {
    consoleAllowedOrigins: [ALLOWED],
    allowedHosts: ["team.example"],
  });
});
afterAll(async () => {
  await allowing?.close();
  await env?.close();
  await testDb?.dispose();
});

describe("the console's files", () => {
  it("serves each listed file with its content type, the security headers and the built bytes", async () => {
    for (const { path, file, type } of CONSOLE_FILES) {
      const answer = await request(env.server.url, path);
      expect(answer.status, path).toBe(200);
      expect(answer.headers["content-type"], path).toBe(type);
      expect(answer.body.equals(await readFile(join(CONSOLE_DIST_DIR, file))), path).toBe(true);
      expect(answer.headers["x-content-type-options"], path).toBe("nosniff");
      expect(answer.headers["referrer-policy"], path).toBe("no-referrer");
      expect(answer.headers["x-frame-options"], path).toBe("DENY");
      expect(answer.headers["cross-origin-resource-policy"], path).toBe("same-origin");
      const csp = String(answer.headers["content-security-policy"] ?? "")
        .split(";")
        .map((d) => d.trim());
      for (const directive of [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
      ]) {
        expect(csp, path).toContain(directive);
      }
      // Nothing loosens it.
      expect(csp.join(" "), path).not.toMatch(/unsafe-inline|unsafe-eval|\*|data:|https?:/);
    }
  });

  it("answers HEAD with the same headers and no body; gzip when asked; 304 for a current copy", async () => {
    const get = await request(env.server.url, "/console.js");
    const head = await request(env.server.url, "/console.js", { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(head.headers["content-length"]).toBe(String(get.body.length));
    expect(head.headers["content-security-policy"]).toBe(get.headers["content-security-policy"]);

    const zipped = await request(env.server.url, "/console.js", {
      headers: { "accept-encoding": "br, gzip;q=0.8" },
    });
    expect(zipped.headers["content-encoding"]).toBe("gzip");
    expect(zipped.headers.vary).toBe("accept-encoding");
    expect(gunzipSync(zipped.body).equals(get.body)).toBe(true);
    const refusedGzip = await request(env.server.url, "/console.js", {
      headers: { "accept-encoding": "gzip;q=0" },
    });
    expect(refusedGzip.headers["content-encoding"]).toBeUndefined();

    const etag = get.headers.etag ?? "";
    expect(etag).toMatch(/^"[\w-]+"$/);
    const again = await request(env.server.url, "/console.js", {
      headers: { "if-none-match": etag },
    });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
  });

  it("refuses other methods on a file with 405, naming GET and HEAD", async () => {
    for (const method of ["POST", "PUT", "DELETE"]) {
      const answer = await request(env.server.url, "/", {
        method,
        ...(method === "DELETE" ? {} : { body: "x" }),
      });
      expect(answer.status, method).toBe(405);
      expect(answer.headers.allow, method).toBe("GET, HEAD");
    }
  });

  it("has no directory listing and no path traversal: every other path is a 404 with none of the file", async () => {
    const packageJson = await readFile(join(CONSOLE_DIST_DIR, "..", "..", "package.json"), "utf8");
    const paths = [
      "/../package.json",
      "/%2e%2e/package.json",
      "/%2E%2E%2Fpackage.json",
      "/..%2f..%2fpackage.json",
      "/console.js/../../package.json",
      "/favicon.svg/..%2f..%2f..%2fpackage.json",
      "/....//package.json",
      "/package.json",
      "/index.html",
      "/console/dist/index.html",
      "/console/dist/",
      "/console/",
      "/dist/console.js",
      "//console.js",
      "/./console.js",
      "/console.js/",
      "/console.js%00",
      "/console.js%2500",
      "/CONSOLE.JS",
      "/.git/config",
      "/server/app.ts",
      "/node_modules/",
      "/%5c..%5cpackage.json",
      "/\\..\\package.json",
    ];
    for (const path of paths) {
      const answer = await request(env.server.url, path);
      expect(answer.status, path).toBe(404);
      const text = answer.body.toString("utf8");
      expect(text, path).not.toContain('"name": "team-protocols"');
      expect(text, path).not.toContain(packageJson.slice(0, 40));
      expect(text, path).not.toMatch(/<a href|index of/i);
    }
    // A query string names no other file: the path alone is looked up.
    const withQuery = await request(env.server.url, "/?file=../package.json");
    expect(withQuery.status).toBe(200);
    expect(withQuery.headers["content-type"]).toBe("text/html; charset=utf-8");
  });

  it("serves exactly what the build writes: console/dist holds the listed files and nothing else", async () => {
    expect((await readdir(CONSOLE_DIST_DIR)).sort()).toEqual(
      CONSOLE_FILES.map((f) => f.file).sort(),
    );
  });

  it("index.html has no inline script or style (the CSP would refuse them) and loads only our files", async () => {
    const html = (await request(env.server.url, "/")).body.toString("utf8");
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBe(1);
    for (const [, attributes, content] of scripts) {
      expect(attributes).toMatch(/src="\/console\.js"/);
      expect(content?.trim()).toBe("");
    }
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=|javascript:/i);
    const urls = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(urls.sort()).toEqual(["/console.css", "/console.js", "/favicon.svg"]);
  });

  it("the bundle never touches cookies or localStorage: the token lives in sessionStorage only", async () => {
    const bundle = await readFile(join(CONSOLE_DIST_DIR, "console.js"), "utf8");
    expect(bundle).toContain("sessionStorage");
    expect(bundle).not.toMatch(/localStorage|document\.cookie|indexedDB/);
  });

  it("a missing file stops the server from starting, naming it (a broken checkout, not a 404 console)", async () => {
    const empty = await mkdtemp(join(tmpdir(), "tp-console-"));
    try {
      expect(() => loadConsoleAssets(empty)).toThrow(/index\.html is missing .*build:console/);
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });

  it("Accept-Encoding: gzip or * with a weight above 0", () => {
    expect(acceptsGzip("gzip")).toBe(true);
    expect(acceptsGzip("deflate, GZIP;q=0.5")).toBe(true);
    expect(acceptsGzip("*")).toBe(true);
    expect(acceptsGzip("gzip;q=0")).toBe(false);
    expect(acceptsGzip("gzip;q=0.000")).toBe(false);
    expect(acceptsGzip("br, deflate")).toBe(false);
    expect(acceptsGzip("xgzip")).toBe(false);
    expect(acceptsGzip(undefined)).toBe(false);
  });
});

describe("cross-origin calls (CORS)", () => {
  const EVIL = "https://evil.example";
  const preflight = (url: string, origin: string, path = "/team.v1.TeamService/ListMembers") =>
    request(url, path, {
      method: "OPTIONS",
      headers: {
        origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type, connect-protocol-version",
      },
    });

  it("by default, refuses a foreign page's preflight and its call, with no Access-Control-Allow-Origin", async () => {
    const team = await env.team();
    const pre = await preflight(env.server.url, EVIL);
    expect(pre.status).toBe(403);
    expect(pre.headers["access-control-allow-origin"]).toBeUndefined();

    const call = await rpc(
      env.server.url,
      "ListMembers",
      {},
      { origin: EVIL, authorization: `Bearer ${team.leadToken}` },
    );
    expect(call.status).toBe(403);
    expect(call.headers["access-control-allow-origin"]).toBeUndefined();
    const error = JSON.parse(call.body.toString("utf8"));
    expect(error.code).toBe("permission_denied");
    expect(error.message).toMatch(/^cross-origin: .*evil\.example.*CONSOLE_ALLOWED_ORIGINS/);
  });

  it("refuses before any handler runs: a foreign page's CreateTeam creates nothing", async () => {
    const name = uniqueName("cors");
    const refused = await rpc(env.server.url, "CreateTeam", { team: name }, { origin: EVIL });
    expect(refused.status).toBe(403);
    // The name is still free: the refused call had no effect.
    const created = await rpc(env.server.url, "CreateTeam", { team: name });
    expect(created.status).toBe(200);
    expect(JSON.parse(created.body.toString("utf8")).token).toMatch(/^tp_/);
  });

  it("refuses /mcp, origins of the same host on another port, and the opaque origin null", async () => {
    const port = new URL(env.server.url).port;
    for (const [path, origin] of [
      ["/mcp", EVIL],
      ["/team.v1.TeamService/ListMembers", `http://127.0.0.1:${Number(port) + 1}`],
      ["/team.v1.TeamService/ListMembers", "http://localhost"],
      ["/team.v1.TeamService/ListMembers", "null"],
    ] as const) {
      const answer = await request(env.server.url, path, {
        method: "POST",
        headers: { origin, "content-type": "application/json" },
        body: "{}",
      });
      expect(answer.status, `${origin} ${path}`).toBe(403);
    }
  });

  it("lets through calls without Origin (agents, CLI) and the console's own page (same host)", async () => {
    const team = await env.team();
    const auth = { authorization: `Bearer ${team.leadToken}` };
    const bare = await rpc(env.server.url, "ListMembers", {}, auth);
    expect(bare.status).toBe(200);
    const own = await rpc(
      env.server.url,
      "ListMembers",
      {},
      { ...auth, origin: env.server.url, host: new URL(env.server.url).host },
    );
    expect(own.status).toBe(200);
    // Same origin needs no CORS headers, and gets none.
    expect(own.headers["access-control-allow-origin"]).toBeUndefined();
    // Behind a TLS proxy the page says https, the Host stays: still the console's own.
    const proxied = await rpc(
      env.server.url,
      "ListMembers",
      {},
      { ...auth, origin: `https://${new URL(env.server.url).host}` },
    );
    expect(proxied.status).toBe(200);
  });

  it("with CONSOLE_ALLOWED_ORIGINS, answers the named origin's preflight and calls with CORS headers, and refuses the rest", async () => {
    const team = await allowing.team();
    const pre = await preflight(allowing.server.url, ALLOWED);
    expect(pre.status).toBe(204);
    expect(pre.headers["access-control-allow-origin"]).toBe(ALLOWED);
    expect(pre.headers.vary).toMatch(/origin/i);
    expect(pre.headers["access-control-allow-methods"]).toMatch(/\bPOST\b/);
    const allowedHeaders = (pre.headers["access-control-allow-headers"] ?? "").toLowerCase();
    for (const h of ["authorization", "content-type", "connect-protocol-version"]) {
      expect(allowedHeaders).toContain(h);
    }
    // The token travels in a header, never as a cookie: no credentials mode.
    expect(pre.headers["access-control-allow-credentials"]).toBeUndefined();

    const call = await rpc(
      allowing.server.url,
      "ListMembers",
      {},
      { origin: ALLOWED, authorization: `Bearer ${team.leadToken}` },
    );
    expect(call.status).toBe(200);
    expect(call.headers["access-control-allow-origin"]).toBe(ALLOWED);
    expect(call.headers["access-control-expose-headers"]).toMatch(/grpc-status/i);

    expect((await preflight(allowing.server.url, EVIL)).status).toBe(403);
    const other = await rpc(
      allowing.server.url,
      "ListMembers",
      {},
      { origin: EVIL, authorization: `Bearer ${team.leadToken}` },
    );
    expect(other.status).toBe(403);
  });
});

describe("DNS rebinding: browsers reach us only by names we are known by", () => {
  // A page of rebind.example whose name the attacker pointed at 127.0.0.1: its calls are
  // "same origin" (Origin and Host both say rebind.example), so only the Host tells.
  const port = () => new URL(env.server.url).port;
  const rebound = () => `rebind.example:${port()}`;

  it("refuses a rebound page's CreateTeam before any handler, naming ALLOWED_HOSTS", async () => {
    const name = uniqueName("rebind");
    const refused = await rpc(
      env.server.url,
      "CreateTeam",
      { team: name },
      { host: rebound(), origin: `http://${rebound()}` },
    );
    expect(refused.status).toBe(403);
    expect(refused.headers["access-control-allow-origin"]).toBeUndefined();
    const error = JSON.parse(refused.body.toString("utf8"));
    expect(error.code).toBe("permission_denied");
    expect(error.message).toMatch(/^host: .*rebind\.example.*ALLOWED_HOSTS/);
    // The name is still free: the refused call had no effect.
    const created = await rpc(env.server.url, "CreateTeam", { team: name });
    expect(created.status).toBe(200);
  });

  it("refuses a browser's request without Origin too (Sec-Fetch-*): the console's files, /metrics, a GET", async () => {
    for (const path of ["/", "/console.js", "/metrics", "/team.v1.TeamService/ListMembers"]) {
      const answer = await request(env.server.url, path, {
        headers: { host: rebound(), "sec-fetch-site": "same-origin", "sec-fetch-mode": "cors" },
      });
      expect(answer.status, path).toBe(403);
      expect(answer.body.toString("utf8"), path).toMatch(/ALLOWED_HOSTS/);
    }
  });

  it("lets agents (no Origin, no Sec-Fetch-*) through by any name: they may reach us through a proxy or DNS", async () => {
    const team = await env.team();
    const call = await rpc(
      env.server.url,
      "ListMembers",
      {},
      { host: rebound(), authorization: `Bearer ${team.leadToken}` },
    );
    expect(call.status).toBe(200);
  });

  it("lets browsers through by localhost, *.localhost, any IP address and the names the operator lists", async () => {
    const team = await allowing.team();
    const auth = { authorization: `Bearer ${team.leadToken}` };
    const p = new URL(allowing.server.url).port;
    for (const host of [
      `localhost:${p}`,
      `LOCALHOST:${p}`,
      "console.localhost",
      `127.0.0.1:${p}`,
      `[::1]:${p}`,
      "192.168.1.20:8080",
      `team.example:${p}`, // ALLOWED_HOSTS
      "console.example", // the host of an origin in CONSOLE_ALLOWED_ORIGINS
    ]) {
      const call = await rpc(
        allowing.server.url,
        "ListMembers",
        {},
        { ...auth, host, origin: `http://${host}` },
      );
      expect(call.status, host).toBe(200);
      const page = await request(allowing.server.url, "/", {
        headers: { host, "sec-fetch-mode": "navigate" },
      });
      expect(page.status, host).toBe(200);
    }
    for (const host of ["team.example.evil", "evil.localhost.example", "127.0.0.1.nip.io"]) {
      const call = await rpc(
        allowing.server.url,
        "ListMembers",
        {},
        { ...auth, host, origin: `http://${host}` },
      );
      expect(call.status, host).toBe(403);
    }
  });

  it("ALLOWED_HOSTS / --allowed-hosts: host names, comma-separated; refuses anything else, naming the variable", () => {
    expect(parseConfig([], {}).allowedHosts).toEqual([]);
    expect(parseConfig([], { ALLOWED_HOSTS: "Team.Example, box.lan," }).allowedHosts).toEqual([
      "team.example",
      "box.lan",
    ]);
    expect(
      parseConfig(["--allowed-hosts", "b.example"], { ALLOWED_HOSTS: "a.example" }).allowedHosts,
    ).toEqual(["b.example"]);
    for (const bad of ["*", "https://a.example", "a.example:8080", "a.example/x", "a b"]) {
      const printed: string[] = [];
      vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
        printed.push(String(chunk));
        return true;
      });
      expect(() => parseConfig([], { ALLOWED_HOSTS: bad }), bad).toThrow();
      expect(printed.join(""), bad).toMatch(/ALLOWED_HOSTS takes host names/);
      vi.restoreAllMocks();
    }
  });
});

describe("config: CONSOLE_ALLOWED_ORIGINS / --console-allowed-origins", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("defaults to none, reads a comma-separated list, and the flag wins over the variable", () => {
    expect(parseConfig([], {}).consoleAllowedOrigins).toEqual([]);
    expect(
      parseConfig([], {
        CONSOLE_ALLOWED_ORIGINS: "https://ops.example.com, http://localhost:5173,",
      }).consoleAllowedOrigins,
    ).toEqual(["https://ops.example.com", "http://localhost:5173"]);
    expect(
      parseConfig(["--console-allowed-origins", "https://b.example"], {
        CONSOLE_ALLOWED_ORIGINS: "https://a.example",
      }).consoleAllowedOrigins,
    ).toEqual(["https://b.example"]);
  });

  it("refuses anything but an origin, naming the variable", () => {
    for (const bad of [
      "*",
      "https://a.example/",
      "https://a.example/path",
      "ftp://a.example",
      "a.example",
      "https://a.example?x",
    ]) {
      const printed: string[] = [];
      vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
        printed.push(String(chunk));
        return true;
      });
      expect(() => parseConfig([], { CONSOLE_ALLOWED_ORIGINS: bad }), bad).toThrow();
      expect(printed.join(""), bad).toMatch(/CONSOLE_ALLOWED_ORIGINS takes web origins/);
      vi.restoreAllMocks();
    }
  });
});
