import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { gzipSync } from "node:zlib";
import type { NodeRequest, NodeResponse } from "./connect-adapter.js";
import { CONSOLE_SECURITY_HEADERS } from "./security-headers.js";

type Req = NodeRequest;
type Res = NodeResponse;

/**
 * Every file the server serves outside the RPCs: the URL path, the file in console/dist/
 * (built by scripts/build-console.ts, committed) and its content type. Nothing else is ever
 * read from disk for a request: a path is looked up in this table, as it came, so there is
 * no directory to list and no path to traverse.
 */
export const CONSOLE_FILES: readonly { path: string; file: string; type: string }[] = [
  { path: "/", file: "index.html", type: "text/html; charset=utf-8" },
  { path: "/console.js", file: "console.js", type: "text/javascript; charset=utf-8" },
  { path: "/console.css", file: "console.css", type: "text/css; charset=utf-8" },
  { path: "/favicon.svg", file: "favicon.svg", type: "image/svg+xml" },
];

/** The console package's dist/ folder, wherever the package manager put the package. */
export const CONSOLE_DIST_DIR = join(
  dirname(createRequire(import.meta.url).resolve("@team-protocols/console/package.json")),
  "dist",
);

interface Asset {
  type: string;
  body: Buffer;
  gzipped: Buffer;
  etag: string;
}

export interface ConsoleAssets {
  /**
   * Answers the request if its path is one of CONSOLE_FILES (GET and HEAD; other methods
   * 405) and returns true; returns false, touching nothing, for every other path.
   */
  serve(req: Req, res: Res): boolean;
}

/**
 * Reads the console's files once, at start: they are small (README: the bundle's size), and
 * served from memory, gzipped ahead when the client accepts it. A missing file is a broken
 * checkout and stops the server from starting, rather than a console that 404s.
 */
export function loadConsoleAssets(dir: string = CONSOLE_DIST_DIR): ConsoleAssets {
  const assets = new Map<string, Asset>();
  for (const { path, file, type } of CONSOLE_FILES) {
    let body: Buffer;
    try {
      body = readFileSync(join(dir, file));
    } catch (err) {
      throw new Error(
        `the web console's ${file} is missing from ${dir} (run npm run build:console)`,
        { cause: err },
      );
    }
    const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
    // level 9 and no timestamp in the header: the same bytes every start.
    assets.set(path, { type, body, gzipped: gzipSync(body, { level: 9 }), etag });
  }
  return {
    serve(req, res) {
      const url = req.url ?? "";
      const query = url.indexOf("?");
      const asset = assets.get(query < 0 ? url : url.slice(0, query));
      if (!asset) return false;
      if (req.method !== "GET" && req.method !== "HEAD") {
        res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain; charset=utf-8" });
        res.end("the console's files are read with GET\n");
        return true;
      }
      const gzip = acceptsGzip(req.headers["accept-encoding"]);
      const headers: Record<string, string> = {
        ...CONSOLE_SECURITY_HEADERS,
        "content-type": asset.type,
        etag: asset.etag,
        vary: "accept-encoding",
      };
      if (ifNoneMatch(req.headers["if-none-match"], asset.etag)) {
        res.writeHead(304, headers);
        res.end();
        return true;
      }
      const body = gzip ? asset.gzipped : asset.body;
      if (gzip) headers["content-encoding"] = "gzip";
      headers["content-length"] = String(body.length);
      res.writeHead(200, headers);
      if (req.method === "HEAD") res.end();
      else res.end(body);
      return true;
    },
  };
}

/** Whether Accept-Encoding lists gzip (or *) with a weight above 0. */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  const value = Array.isArray(header) ? header.join(",") : (header ?? "");
  return value.split(",").some((item) => {
    const [name = "", ...params] = item.split(";").map((s) => s.trim().toLowerCase());
    if (name !== "gzip" && name !== "*") return false;
    const q = params.find((p) => p.startsWith("q="));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

/** If-None-Match names this ETag (or is "*"): the client's copy is current. */
function ifNoneMatch(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const tags = (Array.isArray(header) ? header.join(",") : header).split(",").map((t) => t.trim());
  return tags.some((t) => t === "*" || t === etag || t === `W/${etag}`);
}
