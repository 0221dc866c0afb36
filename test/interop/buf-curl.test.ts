import { type ChildProcess, execFile, spawn } from "node:child_process";
import os from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { repoRoot, withTimeout } from "../support/child-server.js";
import { describeEachDatabase, uniqueName } from "../support/harness.js";

/**
 * `buf curl` from the @bufbuild/buf npm package (what `npx buf` runs), against a real
 * server, with no --schema: everything it knows about the API comes from server reflection.
 * It runs in the OS temp dir, so no buf.yaml or .proto file of ours is within its reach.
 */
const BUF = join(repoRoot, "node_modules", ".bin", "buf");
const CALL_TIMEOUT_MS = 20_000;

// buf curl over each protocol: gRPC needs HTTP/2 (prior knowledge over cleartext); gRPC-Web
// and Connect make their calls over HTTP/1.1 here (buf curl switches to HTTP/2 by itself for
// reflection, a bidi stream).
const protocols: Record<string, string[]> = {
  grpc: ["--protocol", "grpc", "--http2-prior-knowledge"],
  grpcweb: ["--protocol", "grpcweb"],
  connect: [],
};

interface Result {
  exitCode: number;
  stdout: string;
  stderr: string;
}

function bufCurl(args: string[]): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      BUF,
      ["curl", ...args],
      { cwd: os.tmpdir(), timeout: CALL_TIMEOUT_MS },
      (err, stdout, stderr) => {
        const exitCode = err ? (typeof err.code === "number" ? err.code : -1) : 0;
        resolve({ exitCode, stdout, stderr });
      },
    );
  });
}

/** A call that must succeed; returns its JSON response. */
async function call(args: string[]): Promise<Record<string, unknown>> {
  const r = await bufCurl(args);
  expect(r.exitCode, `buf curl ${args.join(" ")}\n${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout);
}

/** The first JSON object buf curl printed: it prints each one pretty, ending on a "}" line. */
function firstObject(output: string): Record<string, unknown> | undefined {
  const end = output.search(/^}$/m);
  return end < 0 ? undefined : JSON.parse(output.slice(0, end + 1));
}

/**
 * A server stream through buf curl: Subscribe never ends by itself, so buf curl is stopped
 * once the first message has come.
 */
async function firstStreamed(args: string[]): Promise<Record<string, unknown>> {
  const child: ChildProcess = spawn(BUF, ["curl", ...args], {
    cwd: os.tmpdir(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stderr?.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    const first = new Promise<Record<string, unknown>>((resolve, reject) => {
      child.stdout?.setEncoding("utf8").on("data", (d: string) => {
        stdout += d;
        const object = firstObject(stdout);
        if (object) resolve(object);
      });
      child.once("exit", (code) =>
        reject(new Error(`buf curl exited (${code}) before a message:\n${stdout}\n${stderr}`)),
      );
    });
    return await withTimeout("the first streamed message", CALL_TIMEOUT_MS, first);
  } finally {
    child.kill("SIGTERM");
    await exited;
  }
}

describeEachDatabase("buf curl, with no schema (server reflection)", (env) => {
  for (const [name, flags] of Object.entries(protocols)) {
    it(`${name}: lists the services and their methods`, async () => {
      const url = env().server.url;
      const services = await bufCurl([...flags, "--list-services", url]);
      expect(services.exitCode, services.stderr).toBe(0);
      expect(services.stdout.trim().split("\n")).toEqual([
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
        "team.v1.TeamService",
      ]);

      const methods = await bufCurl([...flags, "--list-methods", url]);
      expect(methods.exitCode, methods.stderr).toBe(0);
      expect(methods.stdout.trim().split("\n")).toEqual(
        expect.arrayContaining([
          "grpc.health.v1.Health/Check",
          "grpc.health.v1.Health/Watch",
          "grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
          "team.v1.TeamService/CreateTeam",
          "team.v1.TeamService/Send",
          "team.v1.TeamService/Subscribe",
          "team.v1.TeamService/AwaitRequest",
        ]),
      );
    });

    it(`${name}: create a team, add a member, send, stream the inbox, and see a rule refuse a call`, async () => {
      const url = env().server.url;
      const rpc = (method: string) => `${url}/team.v1.TeamService/${method}`;
      const as = (token: unknown) => ["-H", `Authorization: Bearer ${token}`];
      const team = uniqueName(name);

      const created = await call([...flags, "-d", JSON.stringify({ team }), rpc("CreateTeam")]);
      expect(created).toMatchObject({
        token: expect.stringMatching(/^tp_/),
        lead: { name: "team-lead", role: "MEMBER_ROLE_LEAD", status: "MEMBER_STATUS_ACTIVE" },
      });
      const lead = as(created.token);
      const added = await call([...flags, ...lead, "-d", '{"name":"worker"}', rpc("AddMember")]);
      expect(added).toMatchObject({ member: { name: "worker", role: "MEMBER_ROLE_TEAMMATE" } });
      const worker = as(added.token);

      const sent = await call([
        ...flags,
        ...lead,
        "-d",
        JSON.stringify({ to: "worker", message: { text: `hello over ${name}` } }),
        rpc("Send"),
      ]);
      expect(sent).toMatchObject({ seq: "1", deliveries: [{ to: "worker", seq: "1" }] });

      const first = await firstStreamed([
        ...flags,
        ...worker,
        "-d",
        '{"afterSeq":"0"}',
        rpc("Subscribe"),
      ]);
      expect(first).toEqual({
        envelope: expect.objectContaining({
          team,
          seq: "1",
          from: "team-lead",
          to: "worker",
          message: { text: `hello over ${name}` },
        }),
      });

      // no-broadcast: a shutdown request to "*" is refused with InvalidArgument and the rule.
      const refused = await bufCurl([
        ...flags,
        ...lead,
        "-d",
        '{"to":"*","message":{"shutdownRequest":{"reason":"done"}}}',
        rpc("Send"),
      ]);
      // buf curl exits with the RPC's code times 8 (invalid_argument is 3) and prints the
      // error as JSON on stderr.
      expect(refused.exitCode, refused.stderr).toBe(3 * 8);
      const error = JSON.parse(refused.stderr);
      expect(error).toMatchObject({
        code: "invalid_argument",
        message: expect.stringMatching(/^no-broadcast: /),
        details: [{ type: "team.v1.RuleViolation" }],
      });
    });

    it(`${name}: health Check, with no token`, async () => {
      const url = env().server.url;
      const health = await call([
        ...flags,
        "-d",
        '{"service":"team.v1.TeamService"}',
        `${url}/grpc.health.v1.Health/Check`,
      ]);
      expect(health).toEqual({ status: "SERVING" });
    });
  }
});
