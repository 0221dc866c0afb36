import { execFile } from "node:child_process";
import { access, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import { isAbsolute, join } from "node:path";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createTeamClient } from "../../client/index.js";
import { repoRoot } from "../support/child-server.js";
import { type ServeProcess, startTeamServe } from "../support/cli.js";
import { uniqueName } from "../support/harness.js";

/**
 * Installed once, used anywhere: the workspaces packed with `npm pack`, installed into an
 * empty prefix, and `team` run from another folder: --version, `team mcp config` with
 * absolute paths, and a real MCP Client listing the tools of the bridge that configuration
 * starts. The client package alone installs into an empty project without the server's
 * dependencies. npm fetches the third-party dependencies (from its cache when it has them).
 */

const run = promisify(execFile);
let dir: string;
let serve: ServeProcess;
let packs: Record<string, string>;

beforeAll(async () => {
  dir = await mkdtemp(join(os.tmpdir(), "tp-pack-"));
  serve = await startTeamServe(["--port", "0", "--data-dir", join(dir, "data")], 120_000);
  await mkdir(join(dir, "packs"));
  const workspaces = ["gen", "client", "client/mcp", "console", "server", "client/cli"];
  const { stdout } = await run(
    "npm",
    [
      "pack",
      ...workspaces.flatMap((w) => ["-w", w]),
      "--pack-destination",
      join(dir, "packs"),
      "--json",
    ],
    { cwd: repoRoot },
  );
  packs = Object.fromEntries(
    (JSON.parse(stdout) as { name: string; filename: string }[]).map((p) => [
      p.name,
      join(dir, "packs", p.filename),
    ]),
  );
}, 240_000);

afterAll(async () => {
  await serve?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** npm install of these tarballs (and registry packages) into an empty folder. */
async function installInto(prefix: string, specs: string[]): Promise<void> {
  await mkdir(prefix, { recursive: true });
  await writeFile(join(prefix, "package.json"), '{ "name": "empty", "private": true }\n');
  await run(
    "npm",
    ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", ...specs],
    { cwd: prefix, maxBuffer: 16 * 1024 * 1024 },
  );
}

it("the packed CLI, installed into an empty prefix, runs from another folder: --version, mcp config, a real MCP client lists its tools", async () => {
  const prefix = join(dir, "prefix");
  await installInto(prefix, Object.values(packs));
  const team = join(prefix, "node_modules", ".bin", "team");
  const elsewhere = join(dir, "elsewhere");
  await mkdir(elsewhere);
  const { stdout: version } = await run(team, ["--version"], { cwd: elsewhere });
  expect(version.trim()).toMatch(/^\d+\.\d+\.\d+$/);

  const created = await createTeamClient({ baseUrl: serve.url }).createTeam(uniqueName("pack"));
  const env = { ...process.env, TEAM_URL: serve.url, TEAM_TOKEN: created.token };
  const { stdout: printed } = await run(team, ["mcp", "config"], { cwd: elsewhere, env });
  const config = JSON.parse(printed).mcpServers.team as {
    command: string;
    args: string[];
    env: Record<string, string>;
  };
  expect(isAbsolute(config.command)).toBe(true);
  expect(isAbsolute(config.args[0] as string)).toBe(true);
  expect(config.args[0]).toContain(prefix);
  await access(config.args[0] as string);
  expect(config.env).toEqual({ TEAM_URL: serve.url, TEAM_TOKEN: created.token });
  const { stdout: http } = await run(team, ["mcp", "config", "--http"], { cwd: elsewhere, env });
  expect(JSON.parse(http).mcpServers.team).toEqual({
    type: "http",
    url: `${serve.url}/mcp`,
    headers: { Authorization: `Bearer ${created.token}` },
  });

  // The configuration as an MCP client uses it, from a folder that is not the clone.
  const client = new Client({ name: "packed-install-test", version: "1.0.0" });
  await client.connect(
    new StdioClientTransport({
      command: config.command,
      args: config.args,
      env: { ...config.env, PATH: process.env.PATH ?? "" },
      cwd: elsewhere,
    }),
  );
  try {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain("list_members");
  } finally {
    await client.close();
  }
}, 600_000);

it("the packed client package imports in an empty project, without the server's dependencies", async () => {
  const app = join(dir, "app");
  await installInto(app, [
    packs["@team-protocols/contract"] as string,
    packs["@team-protocols/client"] as string,
    "tsx@4.23.15",
  ]);
  const installed = await readdir(join(app, "node_modules"));
  for (const serverOnly of ["pg", "pino", "prom-client", "commander"])
    expect(installed).not.toContain(serverOnly);
  expect(await readdir(join(app, "node_modules", "@team-protocols"))).toEqual([
    "client",
    "contract",
  ]);
  const created = await createTeamClient({ baseUrl: serve.url }).createTeam(uniqueName("app"));
  await writeFile(
    join(app, "main.mjs"),
    `import { createTeamClient } from "@team-protocols/client";
const client = createTeamClient({ baseUrl: process.env.TEAM_URL, token: process.env.TEAM_TOKEN });
console.log(await client.leadName());
`,
  );
  const { stdout } = await run(process.execPath, ["--import", "tsx", "main.mjs"], {
    cwd: app,
    env: { ...process.env, TEAM_URL: serve.url, TEAM_TOKEN: created.token },
  });
  expect(stdout.trim()).toBe("team-lead");
}, 600_000);
