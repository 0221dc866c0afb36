import { spawn } from "node:child_process";
import net from "node:net";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { expect, it } from "vitest";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { freePort, repoRoot, tempDataDir } from "../support/child-server.js";

/** Whether something accepts connections on the port. */
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });

it("`npm start` builds the server and serves it (gRPC, the console's files); SIGTERM (what systemd and container runtimes send) stops it and frees its port", async () => {
  const port = await freePort();
  const npm = spawn("npm", ["start"], {
    cwd: repoRoot,
    env: { ...process.env, PORT: String(port), DATA_DIR: await tempDataDir(), CI: "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const started = new Promise<void>((resolve, reject) => {
    npm.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
      if (output.includes('"event":"start"')) resolve();
    });
    npm.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
    });
    npm.once("exit", () => reject(new Error(`npm start exited early:\n${output}`)));
  });
  await started;
  // The compiled server (scripts/build-server.ts) found its migrations, and the console's files.
  expect(output).toMatch(/built the server into dist/);
  const base = `http://127.0.0.1:${port}`;
  const client = createClient(TeamService, createGrpcTransport({ baseUrl: base }));
  const created = await client.createTeam({ team: "npm-start" });
  expect(created.token).toMatch(/^tp_/);
  const members = await client.listMembers(
    {},
    { headers: { authorization: `Bearer ${created.token}` } },
  );
  expect(members.members.map((m) => m.name)).toEqual(["team-lead"]);
  const page = await fetch(`${base}/`);
  expect(page.status).toBe(200);
  expect(await page.text()).toContain("<!doctype html>");
  const exited = new Promise<number | null>((resolve) => npm.once("exit", resolve));
  npm.kill("SIGTERM");
  expect(await exited).toBe(0);
  expect(output).toContain('"event":"stop"');
  expect(await listening(port)).toBe(false);
}, 90_000);

it("Ctrl-C on `npm start` with streams open (SIGINT to the whole process group, then the SIGINT npm forwards) ends with the stopped line and exit 0", async () => {
  const port = await freePort();
  // detached: its own process group, so the test can signal the group as a terminal's Ctrl-C does.
  const npm = spawn("npm", ["start"], {
    cwd: repoRoot,
    env: { ...process.env, PORT: String(port), DATA_DIR: await tempDataDir(), CI: "" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  const exited = new Promise<number | null>((resolve) => npm.once("exit", resolve));
  await new Promise<void>((resolve, reject) => {
    npm.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
      if (output.includes('"event":"start"')) resolve();
    });
    npm.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
    });
    exited.then(() => reject(new Error(`npm start exited early:\n${output}`)));
  });
  const client = createClient(
    TeamService,
    createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` }),
  );
  const { token } = await client.createTeam({ team: "ctrl-c" });
  const auth = { headers: { authorization: `Bearer ${token}` } };
  // Two streams held open: the stop has to end them, which is when a second signal lands.
  const ended: Promise<unknown>[] = [];
  const opened: Promise<void>[] = [];
  for (const stream of [client.subscribe({}, auth), client.watchTeam({}, auth)]) {
    const iterator = stream[Symbol.asyncIterator]();
    opened.push(
      iterator.next().then(
        () => undefined,
        () => undefined,
      ),
    );
    ended.push(
      (async () => {
        try {
          for (;;) if ((await iterator.next()).done) return;
        } catch {
          return;
        }
      })(),
    );
  }
  await Promise.race([Promise.all(opened), new Promise((r) => setTimeout(r, 1000))]);
  process.kill(-(npm.pid as number), "SIGINT");
  expect(await exited).toBe(0);
  expect(output).toContain('"event":"stop"');
  expect(output).toContain("team-protocols stopped");
  await Promise.all(ended);
  expect(await listening(port)).toBe(false);
}, 90_000);
