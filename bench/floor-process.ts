import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { cpuOf, stopChild } from "./child-process.js";
import { LISTENING_EVENT } from "./floors/listening.js";

const repoRoot = fileURLToPath(new URL("..", import.meta.url));
const START_TIMEOUT_MS = 30_000;

/** The floor servers of bench/floors/, each the file of that name. */
export const FLOORS = ["raw-http2", "grpc-js", "connect-node"] as const;
export type FloorName = (typeof FLOORS)[number];

/** A floor server as a child process of its own, like the server under test. */
export interface FloorServer {
  readonly name: FloorName;
  readonly url: string;
  readonly pid: number;
  cpuMs(): Promise<number | undefined>;
  stop(): Promise<void>;
}

/** Starts bench/floors/<name>.ts and learns its port from the line it prints. */
export async function startFloor(name: FloorName): Promise<FloorServer> {
  const child = spawn(process.execPath, ["--import", "tsx", `bench/floors/${name}.ts`], {
    cwd: repoRoot,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.once("error", () => resolve());
  });
  let output = "";
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => fail("no listening line"), START_TIMEOUT_MS);
    function fail(why: string) {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`floor ${name} did not start (${why}); output:\n${output.slice(-4000)}`));
    }
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      output = (output + chunk).slice(-16_000);
    });
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      output = (output + chunk).slice(-16_000);
      const line = output.split("\n").find((l) => l.includes(`"event":"${LISTENING_EVENT}"`));
      if (line) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { port: number }).port);
      }
    });
    void exited.then(() => fail(`exited with ${child.exitCode ?? child.signalCode}`));
  });
  const pid = child.pid as number;
  let stopping: Promise<void> | undefined;
  return {
    name,
    url: `http://127.0.0.1:${port}`,
    pid,
    cpuMs: () => cpuOf(pid),
    stop() {
      stopping ??= stopChild(child, exited);
      return stopping;
    },
  };
}
