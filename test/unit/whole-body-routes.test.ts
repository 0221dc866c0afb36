import { describe, expect, it } from "vitest";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { wholeBodyRoutes } from "../../server/http/whole-body-routes.js";
import { serveReflection } from "../../server/reflection/server-reflection.js";

/**
 * Which HTTP/2 streams the server holds until their body has ended
 * (server/http/held-bodies.ts): only those whose handler can do nothing before.
 */
describe("the requests held until their body has ended", () => {
  const whole = wholeBodyRoutes((router) => {
    router.service(TeamService, {});
    serveReflection(router);
  }, 1024);
  const post = (path: string, type?: string) =>
    whole.holds({ ":method": "POST", ":path": path, "content-type": type });
  const send = `/${TeamService.typeName}/Send`;
  const subscribe = `/${TeamService.typeName}/Subscribe`;
  const reflect = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";

  it("unary and server-streaming methods, in every content type connect serves them in", () => {
    for (const type of [
      "application/json",
      "application/json; charset=utf-8",
      "application/proto",
      "application/grpc-web+proto",
      "application/grpc-web+json",
      "application/grpc",
      "application/grpc+proto",
    ]) {
      expect(post(send, type), type).toBe(true);
    }
    for (const type of ["application/connect+json", "application/grpc-web+proto"]) {
      expect(post(subscribe, type), type).toBe(true);
    }
  });

  it("not a bidi stream (reflection), which is read as it goes", () => {
    for (const type of ["application/connect+proto", "application/grpc-web+proto"]) {
      expect(post(reflect, type), type).toBe(false);
    }
  });

  it("not a content type connect refuses at once, a path with no RPC, or a GET", () => {
    expect(post(send, "text/plain")).toBe(false);
    expect(post(send)).toBe(false);
    expect(post("/mcp", "application/json")).toBe(false);
    expect(post(`/${TeamService.typeName}/NoSuchMethod`, "application/json")).toBe(false);
    expect(
      whole.holds({ ":method": "GET", ":path": send, "content-type": "application/json" }),
    ).toBe(false);
  });
});
