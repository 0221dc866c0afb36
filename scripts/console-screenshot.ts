/**
 * Takes docs/console.png, the README's picture of the web console, and docs/console-tasks.png,
 * its Tasks board alone: a throwaway server (the embedded database in a temporary folder, a
 * free port), a small team that has done a few things and planned a few tasks, and Debian's
 * chromium signed in as the lead, showing a plan waiting for an answer.
 *
 *   npm run screenshot                     writes docs/console.png and docs/console-tasks.png
 *   npm run screenshot -- --out other.png  (the board beside it: other-tasks.png)
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
  // The task list: a plan with dependencies, one task done, one in progress, one in review.
  await lead.createTask("Tokenizer", { description: "src/parser2/tokens.ts" });
  await lead.createTask("Grammar", { blockedBy: ["1"], activeForm: "Writing the grammar" });
  await lead.createTask("Error messages", { blockedBy: ["1"] });
  await lead.createTask("Corpus comparison", { blockedBy: ["2", "3"] });
  await lead.createTask("Switch over", { blockedBy: ["4"] });
  await lead.createTask("Benchmarks");
  await lead.assignTask("1", "bob");
  await lead.approveSignoff((await bob.requestSignoff("1", "tokenizer done")).requestId, {
    to: "bob",
  });
  await lead.assignTask("2", "bob");
  await bob.updateTask("2", { status: "in_progress" });
  await lead.assignTask("3", "alice");
  await alice.requestSignoff("3", "every error names its line and column");

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
    await page.waitForSelector(
      '#tasks .column-tasks[data-column=in_review] .task-card[data-task-id="3"]',
    );
    await page.screenshot({ path: out, fullPage: true });
    console.log(`wrote ${out}`);
    const board = out.replace(/\.png$/, "-tasks.png");
    await page.locator("#tasks").screenshot({ path: board });
    console.log(`wrote ${board}`);
  } finally {
    await browser.close();
  }
} finally {
  await server.stop();
  await rm(dataDir, { recursive: true, force: true });
}
