/**
 * Takes docs/console.png, the README's picture of the web console: a throwaway server (the
 * embedded database in a temporary folder, a free port), a small team that has done a few
 * things, and Debian's chromium signed in as the lead, showing a plan waiting for an answer.
 *
 *   npm run screenshot                     writes docs/console.png
 *   npm run screenshot -- --out other.png
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { createTeamClient } from "../client/index.js";
import { parseConfig } from "../server/config.js";
import { silentLogger } from "../server/logger.js";
import { run } from "../server/main.js";

const root = join(import.meta.dirname, "..");
const outIndex = process.argv.indexOf("--out");
const out =
  outIndex > 0 ? (process.argv[outIndex + 1] as string) : join(root, "docs", "console.png");

const dataDir = await mkdtemp(join(tmpdir(), "tp-screenshot-"));
const server = await run(
  parseConfig(["--port", "0", "--host", "127.0.0.1"], { DATA_DIR: join(dataDir, "data") }),
  silentLogger(),
);
try {
  const anon = createTeamClient({ baseUrl: server.url });
  const { token } = await anon.createTeam("parser-rewrite", { leadPermissionMode: "accept_edits" });
  const lead = anon.withToken(token);
  const alice = lead.withToken((await lead.addMember("alice", { permissionMode: "plan" })).token);
  const bob = lead.withToken((await lead.addMember("bob")).token);
  await lead.addMember("dashboard", { observer: true });

  await lead.broadcast("standup in 5 minutes");
  const risky = await alice.submitPlan("1. rm -rf src/parser/\n2. rewrite it from scratch");
  await lead.rejectPlan(risky.requestId, "too risky: keep the old parser until the new one passes");
  await bob.notifyTask({
    taskId: "t-7",
    status: "completed",
    description: "fix the tokenizer",
    result: "all 212 tests green",
  });
  const shutdown = await lead.requestShutdown("bob", { reason: "your task is done" });
  await bob
    .rejectShutdown(shutdown.requestId, " ")
    .catch(() => "refused: reason-on-reject, in the journal");
  await bob.rejectShutdown(shutdown.requestId, "the integration tests are still running");
  await alice.submitPlan(
    "1. add src/parser2/ behind the PARSER2 flag\n2. run both parsers on the corpus\n3. switch over when they agree",
  );

  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true });
  try {
    const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    await page.goto(`${server.url}/`);
    await page.fill("#token", token);
    await page.click("#sign-in button[type=submit]");
    await page.waitForSelector("#feed-status[data-state=live]");
    await page.waitForSelector("#requests .request >> text=PARSER2");
    await page.waitForSelector("#journal tbody tr[data-outcome=refused]");
    await page.waitForSelector("#members tr[data-member=dashboard]");
    await page.screenshot({ path: out, fullPage: true });
    console.log(`wrote ${out}`);
  } finally {
    await browser.close();
  }
} finally {
  await server.stop();
  await rm(dataDir, { recursive: true, force: true });
}
