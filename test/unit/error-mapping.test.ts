import { Code } from "@connectrpc/connect";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { RuleViolationSchema } from "../../gen/team/v1/rule_violation_pb.js";
import { DomainError, RuleViolationError } from "../../server/errors.js";
import { reportCallError, toConnectError } from "../../server/interceptors/error-mapping.js";

describe("error mapping (the one place errors become Connect errors)", () => {
  it("keeps a domain error's message and gives it its code", () => {
    const e = toConnectError(
      new DomainError("permission-denied", "only the team lead may add members"),
    );
    expect(e.code).toBe(Code.PermissionDenied);
    expect(e.rawMessage).toBe("only the team lead may add members");
  });

  it("gives a rule refusal its RuleViolation detail", () => {
    const e = toConnectError(
      new RuleViolationError("no-broadcast", "invalid-argument", "no", "to"),
    );
    expect(e.rawMessage).toBe("no-broadcast: no");
    expect(e.findDetails(RuleViolationSchema)[0]).toMatchObject({
      rule: "no-broadcast",
      field: "to",
    });
  });

  it("reports an unreachable database as Unavailable and a vanished client as Canceled", () => {
    expect(toConnectError(Object.assign(new Error("x"), { code: "ECONNREFUSED" })).code).toBe(
      Code.Unavailable,
    );
    expect(toConnectError(Object.assign(new Error("x"), { code: "57P01" })).code).toBe(
      Code.Unavailable,
    );
    expect(
      toConnectError(
        Object.assign(new Error("Premature close"), { code: "ERR_STREAM_PREMATURE_CLOSE" }),
      ).code,
    ).toBe(Code.Canceled);
  });

  it("hides anything else behind a generic Internal, keeping the cause for the log", () => {
    const cause = new Error("SELECT failed: secret detail");
    const e = toConnectError(cause);
    expect(e.code).toBe(Code.Internal);
    expect(e.rawMessage).toBe("internal error");
    expect(e.cause).toBe(cause);
  });

  it("logs a refusal's message capped, as the wire carries it: a huge bad value is not a huge log line", () => {
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => lines.push(line) });
    const huge = `bad value ${"x".repeat(1_000_000)}`;
    reportCallError(
      logger,
      "team.v1.TeamService/Subscribe",
      new DomainError("invalid-argument", huge),
      false,
    );
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0] ?? "{}");
    expect(line.event).toBe("rpc_refused");
    expect(line.msg.startsWith("bad value xxx")).toBe(true);
    expect(line.msg.endsWith("… (truncated)")).toBe(true);
    expect(lines[0]?.length).toBeLessThan(2048);
  });
});
