import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { startServer } from "../../server/http/http-server.js";

/**
 * REQUEST_TIMEOUT_MS shorter than HEADERS_TIMEOUT_MS cannot be kept (Node refuses it: the
 * headers are part of the request); the server raises it and says so at start, once.
 */
describe("a request timeout shorter than the headers timeout", () => {
  const start = async (requestTimeoutMs: number) => {
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => lines.push(line) });
    const server = await startServer({
      handler: (_req, res) => res.end("ok"),
      host: "127.0.0.1",
      port: 0,
      logger,
      headersTimeoutMs: 5_000,
      requestTimeoutMs,
    });
    await server.close(1_000);
    return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  };

  it("is raised to it with a request_timeout_raised warning naming both", async () => {
    const raised = (await start(1_000)).filter((l) => l.event === "request_timeout_raised");
    expect(raised).toHaveLength(1);
    expect(raised[0]).toMatchObject({
      requestTimeoutMs: 1_000,
      headersTimeoutMs: 5_000,
      effectiveMs: 5_000,
    });
  });

  it("is not mentioned when it is not shorter", async () => {
    const lines = await start(6_000);
    expect(lines.filter((l) => l.event === "request_timeout_raised")).toHaveLength(0);
  });
});
