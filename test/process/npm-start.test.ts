import { spawn } from "node:child_process";
import net from "node:net";
import { expect, it } from "vitest";
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

it("SIGTERM to `npm start` (what systemd and container runtimes send) stops the server and frees its port", async () => {
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
    npm.once("exit", () => reject(new Error(`npm start exited early:\n${output}`)));
  });
  await started;
  const exited = new Promise<number | null>((resolve) => npm.once("exit", resolve));
  npm.kill("SIGTERM");
  expect(await exited).toBe(0);
  expect(output).toContain('"event":"stop"');
  expect(await listening(port)).toBe(false);
}, 90_000);
