import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import * as internals from "../../server/grpc/connect-internals.js";
import {
  CONNECT_FUNCTION_ARITY,
  CONNECT_VERSION_READ,
} from "../../server/grpc/connect-internals.js";

/** The installed @connectrpc/connect's package.json (its exports map does not list it). */
function installedConnect(): { name: string; version: string } {
  let dir = dirname(createRequire(import.meta.url).resolve("@connectrpc/connect"));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
      if (pkg.name === "@connectrpc/connect") return pkg;
    } catch {
      // no package.json here: one folder up
    }
    const up = dirname(dir);
    if (up === dir) throw new Error("no package.json for @connectrpc/connect");
    dir = up;
  }
}

describe("connect-es internals the gRPC bare-stream path uses (server/grpc/connect-internals.ts)", () => {
  it("were read from the installed version: an upgrade must re-read them and this figure", () => {
    expect(installedConnect().version).toBe(CONNECT_VERSION_READ);
  });

  it("are there, each function with the arity it had in that version", () => {
    const exported = internals as unknown as Record<string, unknown>;
    const found = Object.fromEntries(
      Object.keys(CONNECT_FUNCTION_ARITY).map((name) => {
        const fn = exported[name];
        return [name, typeof fn === "function" ? fn.length : typeof fn];
      }),
    );
    expect(found).toEqual(CONNECT_FUNCTION_ARITY);
  });

  it("keep the gRPC constants connect-node answers with", () => {
    expect({
      contentTypeJson: internals.contentTypeJson,
      contentTypeProto: internals.contentTypeProto,
      grpcStatusOk: internals.grpcStatusOk,
      headerAcceptEncoding: internals.headerAcceptEncoding.toLowerCase(),
      headerContentType: internals.headerContentType.toLowerCase(),
      headerEncoding: internals.headerEncoding.toLowerCase(),
      headerGrpcStatus: internals.headerGrpcStatus.toLowerCase(),
    }).toEqual({
      contentTypeJson: "application/grpc+json",
      contentTypeProto: "application/grpc+proto",
      grpcStatusOk: "0",
      headerAcceptEncoding: "grpc-accept-encoding",
      headerContentType: "content-type",
      headerEncoding: "grpc-encoding",
      headerGrpcStatus: "grpc-status",
    });
  });

  it("are imported through that one file: no other file of server/grpc/ takes connect's protocol modules", () => {
    const dir = join(import.meta.dirname, "../../server/grpc");
    const others = readdirSync(dir)
      .filter((f) => f.endsWith(".ts") && f !== "connect-internals.ts")
      .filter((f) =>
        /from "@connectrpc\/connect\/protocol/.test(readFileSync(join(dir, f), "utf8")),
      );
    expect(others).toEqual([]);
  });
});
