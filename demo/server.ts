import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfig } from "../server/config.js";
import { createLogger } from "../server/logger.js";
import { run } from "../server/main.js";

export interface DemoServer {
  url: string;
  /** Stops the server and deletes its database. */
  stop(): Promise<void>;
}

/**
 * The real server, in this process, on a free port and a throwaway embedded database. The
 * environment is not read (an empty one is passed): a DATABASE_URL set for other purposes
 * must not send the demo's team into a real database.
 */
export async function startDemoServer(): Promise<DemoServer> {
  const dir = await mkdtemp(join(tmpdir(), "team-demo-"));
  try {
    const config = parseConfig(
      ["--port", "0", "--data-dir", join(dir, "data"), "--log-level", "warn"],
      {},
    );
    const server = await run(config, createLogger(config.logLevel));
    return {
      url: server.url,
      async stop() {
        await server.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
