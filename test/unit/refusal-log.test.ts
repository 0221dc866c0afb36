import { Code } from "@connectrpc/connect";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { DomainError, LimitError, RuleViolationError } from "../../server/errors.js";
import { reportCallError, toConnectError } from "../../server/interceptors/error-mapping.js";
import { createRefusalLog } from "../../server/interceptors/refusal-log.js";

describe("refusal log: a flood of refusals is one line a second per method and code", () => {
  it("logs the first refusal of a kind, leaves out the rest of the interval, then counts them", () => {
    let t = 0;
    const log = createRefusalLog(1_000, () => t);
    expect(log.take("Send 3")).toBe(0);
    expect(log.take("Send 3")).toBeUndefined();
    expect(log.take("Send 3")).toBeUndefined();
    // Another kind has its own interval.
    expect(log.take("Send 5")).toBe(0);
    t = 999;
    expect(log.take("Send 3")).toBeUndefined();
    t = 1_000;
    expect(log.take("Send 3")).toBe(3);
    expect(log.take("Send 3")).toBeUndefined();
  });

  it("reportCallError writes one line for many refusals, and the next says how many it left out", () => {
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => lines.push(line) });
    let t = 0;
    const refusals = createRefusalLog(1_000, () => t);
    const refuse = () =>
      reportCallError(
        logger,
        "team.v1.TeamService/Send",
        new DomainError("invalid-argument", "size-shape: no message"),
        false,
        refusals,
      );
    for (let i = 0; i < 500; i++) expect(refuse().code).toBe(Code.InvalidArgument);
    expect(lines).toHaveLength(1);
    t = 2_000;
    refuse();
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[1] ?? "{}")).toMatchObject({ event: "rpc_refused", alsoRefused: 499 });
    // Errors of ours are never left out.
    reportCallError(logger, "team.v1.TeamService/Send", new Error("bug"), false, refusals);
    reportCallError(logger, "team.v1.TeamService/Send", new Error("bug"), false, refusals);
    expect(lines.filter((l) => JSON.parse(l).event === "rpc_error")).toHaveLength(2);
  });
});

describe("a refusal captures no stack trace (it is an answer, not a fault)", () => {
  const frames = (e: Error) => (e.stack ?? "").split("\n").filter((l) => /^\s+at /.test(l));

  it("domain errors and the Connect errors made of them have no frames; other errors keep theirs", () => {
    const limit = Error.stackTraceLimit;
    const refusals = [
      new DomainError("not-found", "no such member"),
      new RuleViolationError("size-shape", "invalid-argument", "no message", "message"),
      new LimitError("send-rate", "too fast", 10),
    ];
    for (const e of refusals) {
      expect(frames(e), e.message).toEqual([]);
      expect(frames(toConnectError(e)), e.message).toEqual([]);
      expect(toConnectError(e).cause).toBe(e);
    }
    expect(Error.stackTraceLimit).toBe(limit);
    expect(frames(new Error("a bug")).length).toBeGreaterThan(0);
    expect(frames(toConnectError(new Error("a bug"))).length).toBeGreaterThan(0);
  });
});
