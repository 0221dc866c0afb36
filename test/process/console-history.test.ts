import { createClient } from "@connectrpc/connect";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { afterThisTest, startServer, tempDataDir } from "../support/child-server.js";
import { useChromium } from "../support/console-browser.js";
import { createScratchPgDatabase, databaseKinds } from "../support/databases.js";
import { transportFor } from "../support/harness.js";
import { inbox, planRequest, planResponse, text } from "../support/protocol-helpers.js";

/**
 * The console's search box and thread view in chromium (Debian's, driven by playwright-core)
 * against the server as a process, on each database: a search shows the ranked hits with the
 * server's «marked» words highlighted, a click on a hit or on a feed row opens the whole
 * thread oldest first, and a refused search shows the server's sentence. Every wait is for an
 * element; nothing sleeps.
 */

const chromium = useChromium();

/** The thread view's rows as "from → to|words", in the order shown. */
const threadRows = (page: Page) =>
  page.$$eval("#thread li.message", (rows) =>
    rows.map(
      (r) => `${r.querySelector(".who")?.textContent}|${r.querySelector(".detail")?.textContent}`,
    ),
  );

describe("the console's search and thread view", () => {
  for (const { kind, skip } of databaseKinds()) {
    it.skipIf(skip)(
      `${kind}: searches with highlighted snippets, opens a thread from a hit, a feed row and a request, shows a refusal`,
      async () => {
        const env: Record<string, string> = { DATA_DIR: await tempDataDir() };
        if (kind === "postgres") {
          const scratch = await createScratchPgDatabase();
          afterThisTest(() => scratch.drop());
          env.DATABASE_URL = scratch.url;
        }
        const server = await startServer(env);
        const client = (token?: string) =>
          createClient(TeamService, transportFor(server.url, "connect", token));
        const problems: string[] = [];
        const created = await client().createTeam({ team: "history" });
        const lead = client(created.token);
        const alice = client((await lead.addMember({ name: "alice" })).token);
        const bobToken = (await lead.addMember({ name: "bob" })).token;

        // A thread of three: the lead asks, alice replies, the lead replies to her reply.
        await lead.send({ to: "alice", message: text("the parser drops tabs") });
        const askedId = (await inbox(alice))[0]?.id ?? "";
        expect(askedId).toMatch(/^env_/);
        await alice.send({
          to: "team-lead",
          message: text("fixed in lexer.ts, tabs kept now"),
          replyTo: askedId,
        });
        await lead.send({
          to: "alice",
          message: text("thanks, closing it"),
          replyTo: (await inbox(lead))[0]?.id ?? "",
        });
        // Another thread, which the parser's must not pull in.
        await lead.send({ to: "bob", message: text("lunch at noon?") });
        // A protocol request and its answer: one thread of their own.
        const plan = await alice.send({
          to: "team-lead",
          message: planRequest("rewrite the tokenizer first"),
        });
        await lead.send({ to: "alice", message: planResponse(plan.requestId, true) });

        const page = await chromium.signedIn(server.url, created.token, problems);
        await page.waitForSelector("#feed-status[data-state=live]");

        // --- Search: hits best first, the matched words highlighted. ---------------------
        await page.fill("#search input[name=query]", "parser");
        await page.click("#search button.search");
        await page.waitForSelector("#search li.hit");
        const hits = await page.$$eval("#search li.hit", (rows) =>
          rows.map((r) => ({
            marks: [...r.querySelectorAll(".snippet mark")].map((m) => m.textContent),
            text: r.querySelector(".snippet")?.textContent ?? "",
            subject: r.querySelector(".subject")?.textContent ?? "",
            kind: r.querySelector(".tag")?.textContent ?? "",
            time: r.querySelector("time")?.textContent ?? "",
          })),
        );
        expect(hits).toHaveLength(1);
        expect(hits[0]).toMatchObject({
          marks: ["parser"],
          subject: "team-lead → alice",
          kind: "text",
        });
        expect(hits[0]?.text).toContain("drops tabs");
        expect(hits[0]?.text).not.toMatch(/[«»]/);
        expect(hits[0]?.time).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);

        // A word in two messages of the thread (stemmed: "tabs"), then nothing found.
        await page.fill("#search input[name=query]", "tab");
        await page.click("#search button.search");
        await page.waitForSelector('#search li.hit[data-rank="2"]');
        const tabs = await page.$$eval("#search li.hit .snippet", (s) =>
          s.map((e) => e.textContent),
        );
        expect(tabs.sort()).toEqual([
          expect.stringContaining("fixed in lexer.ts, tabs"),
          expect.stringContaining("the parser drops tabs"),
        ]);
        await page.fill("#search input[name=query]", "zebra");
        await page.click("#search button.search");
        await page.waitForSelector("#search .empty >> text=Nothing found");

        // --- A click on a hit opens its whole thread, oldest first. ----------------------
        await page.fill("#search input[name=query]", "fixed");
        await page.click("#search button.search");
        await page.click("#search li.hit");
        await page.waitForSelector("#thread li.message");
        expect(await threadRows(page)).toEqual([
          "team-lead → alice|text: the parser drops tabs",
          "alice → team-lead|text: fixed in lexer.ts, tabs kept now",
          "team-lead → alice|text: thanks, closing it",
        ]);
        expect(await page.getAttribute("#thread", "data-thread-id")).toBe(askedId);
        await page.waitForSelector(
          `#thread li.message[data-order="2"] .reply-to >> text=${askedId}`,
        );
        await page.click("#thread button.close");
        await page.waitForSelector("#thread", { state: "detached" });

        // --- A click on a row of the feed: a message's, then a request's. ----------------
        await page.click("#feed li.event[data-kind=message] >> text=lunch at noon?");
        await page.waitForSelector("#thread li.message >> text=lunch at noon?");
        expect(await threadRows(page)).toEqual(["team-lead → bob|text: lunch at noon?"]);
        await page.click("#feed li.event[data-kind=request] >> text=approved");
        await page.waitForSelector(`#thread[data-thread-id="${plan.requestId}"] li.message`);
        const steps = await page.$$eval("#thread li.message .tag", (tags) =>
          tags.map((t) => t.textContent),
        );
        expect(steps).toEqual(["planApprovalRequest", "planApprovalResponse"]);

        // --- A refusal is shown as the server wrote it. ----------------------------------
        await page.fill("#search input[name=query]", "x".repeat(1025));
        await page.click("#search button.search");
        await page.waitForSelector(
          "#search .refusal >> text=size-shape: query is longer than 1024 bytes",
        );
        expect(await page.$$("#search li.hit")).toHaveLength(0);

        // --- A teammate searches what it may read: bob never sees the parser thread. -----
        const bobPage = await chromium.signedIn(server.url, bobToken, problems);
        await bobPage.fill("#search input[name=query]", "parser");
        await bobPage.click("#search button.search");
        await bobPage.waitForSelector("#search .empty >> text=Nothing found");
        await bobPage.click("#inbox li.event >> text=lunch at noon?");
        await bobPage.waitForSelector("#thread li.message >> text=lunch at noon?");

        expect(problems).toEqual([]);
      },
      240_000,
    );
  }
});
