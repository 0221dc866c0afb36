import { Code, ConnectError, createClient } from "@connectrpc/connect";
import type { Page } from "playwright-core";
import { expect, it } from "vitest";
import { MemberRole, PermissionMode } from "../../gen/team/v1/enums_pb.js";
import type { Envelope } from "../../gen/team/v1/records_pb.js";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { startServer, tempDataDir } from "../support/child-server.js";
import { PAGE_WAIT_MS, useChromium } from "../support/console-browser.js";
import { type TeamClient, transportFor } from "../support/harness.js";
import { planRequest, refused, shutdownRequest, text } from "../support/protocol-helpers.js";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.js";
import { withTimeout } from "../support/timeout.js";

/**
 * Issue #18's "done means" for the web console, in a real browser: Debian's chromium driven by
 * playwright-core, against the server `npm start` runs (server/main.ts as a child process, on
 * the embedded database, configured by environment variables). The page is loaded through a
 * TCP proxy so that the test can cut its connections and see the feed resume from its cursor.
 * Teammates are real clients of the same server (gRPC). Every wait is for an element or an
 * event; nothing sleeps and no duration is asserted.
 */

const ALLOWED_ORIGIN = "https://allowed.example";
/** A name an attacker pointed at 127.0.0.1 (DNS rebinding), and one the operator lists. */
const REBOUND_NAME = "rebind.test";
const LISTED_NAME = "team.test";

// DNS rebinding, played out: the attacker's names resolve to this machine.
const chromium = useChromium([
  `--host-resolver-rules=MAP ${REBOUND_NAME} 127.0.0.1, MAP ${LISTED_NAME} 127.0.0.1`,
]);

/** A member's Subscribe stream read in the background: what came, and how it ended. */
function follow(client: TeamClient) {
  const envelopes: Envelope[] = [];
  const waiting = new Set<() => void>();
  const ended = (async () => {
    try {
      for await (const r of client.subscribe({ afterSeq: 0n })) {
        if (r.event.case === "envelope") envelopes.push(r.event.value);
        for (const w of [...waiting]) w();
      }
      return undefined;
    } catch (err) {
      return ConnectError.from(err);
    } finally {
      for (const w of [...waiting]) w();
    }
  })();
  const until = (what: string, find: (e: Envelope) => boolean) =>
    withTimeout(
      `${what}; the stream had: ${envelopes.map((e) => e.message?.kind.case).join(", ")}`,
      PAGE_WAIT_MS,
      new Promise<Envelope>((resolve, reject) => {
        const check = () => {
          const found = envelopes.find(find);
          if (found) {
            waiting.delete(check);
            resolve(found);
          }
        };
        waiting.add(check);
        check();
        void ended.then(() => {
          const found = envelopes.find(find);
          if (found) resolve(found);
          else reject(new Error(`the stream ended before ${what}`));
        });
      }),
    );
  return { envelopes, until, ended };
}

/**
 * The browser globals the page-side functions below use. This project's TypeScript has no
 * DOM types, and the page's CSP refuses code given as text (no eval), so these functions are
 * written against this shape, reaching the page's globals through globalThis.
 */
interface PageScope {
  document: {
    cookie: string;
    querySelectorAll(selector: string): ArrayLike<{
      getAttribute(name: string): string | null;
      textContent: string | null;
    }>;
  };
  sessionStorage: { getItem(key: string): string | null; length: number };
  localStorage: { length: number };
  fetch: typeof fetch;
}

interface Seen {
  url: string;
  headers: Record<string, string>;
}

/** A fresh browser context (its own sessionStorage) with a page, recording its requests. */
async function openConsole(base: string, seen: Seen[], problems: string[]) {
  const context = await chromium.browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const page = await context.newPage();
  page.setDefaultTimeout(PAGE_WAIT_MS);
  page.on("request", (r) => seen.push({ url: r.url(), headers: r.headers() }));
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  page.on("console", (m) => {
    // A CSP or Trusted Types violation is reported on the console.
    if (/Content Security Policy|Trusted Type/i.test(m.text())) problems.push(m.text());
  });
  await page.goto(`${base}/`);
  return { context, page };
}

async function signIn(page: Page, token: string) {
  await page.fill("#token", token);
  await page.click("#sign-in button[type=submit]");
  await page.waitForSelector("#who");
}

/** The feed's event positions, as the page shows them. */
const positions = (page: Page) =>
  page.$$eval("#feed li.event", (items) => items.map((li) => li.getAttribute("data-position")));

it("the console in chromium: a lead rejects and approves plans live, the feed resumes after a cut, force-stop ends a stream, an observer only watches", async () => {
  const server = await startServer({
    DATA_DIR: await tempDataDir(),
    CONSOLE_ALLOWED_ORIGINS: ALLOWED_ORIGIN,
    ALLOWED_HOSTS: LISTED_NAME,
  });
  const proxy: TcpProxy = await startTcpProxy(Number(new URL(server.url).port));
  const client = (token?: string) =>
    createClient(TeamService, transportFor(server.url, "grpc", token));
  const problems: string[] = [];
  const seen: Seen[] = [];
  try {
    // The team: the lead works in accept_edits; alice starts in plan mode; bob in default.
    const created = await client().createTeam({
      team: "console",
      leadPermissionMode: PermissionMode.ACCEPT_EDITS,
    });
    const lead = client(created.token);
    const aliceToken = (
      await lead.addMember({ name: "alice", permissionMode: PermissionMode.PLAN })
    ).token;
    const bobToken = (await lead.addMember({ name: "bob" })).token;
    const eyeToken = (await lead.addMember({ name: "eye", role: MemberRole.OBSERVER })).token;
    const alice = client(aliceToken);
    const bob = client(bobToken);
    const tokens = [created.token, aliceToken, bobToken, eyeToken];

    // --- The lead signs in. -------------------------------------------------------------
    const { context: leadContext, page } = await openConsole(proxy.url, seen, problems);
    // A wrong token is refused by the server, in words, and nothing is kept.
    await page.fill("#token", "tp_not-a-real-token");
    await page.click("#sign-in button[type=submit]");
    await page.waitForSelector("#sign-in .refusal >> text=unauthenticated");
    expect(
      await page.evaluate(() => (globalThis as unknown as PageScope).sessionStorage.length),
    ).toBe(0);
    await signIn(page, created.token);
    expect(await page.textContent("#who")).toContain("team-lead");
    expect(await page.$("#read-only")).toBeNull();
    await page.waitForSelector("#feed-status[data-state=live]");
    await page.waitForSelector("#members tr[data-member=alice] .mode >> text=plan");
    // A reload keeps the tab's session (sessionStorage), with no sign-in asked again.
    await page.reload();
    await page.waitForSelector("#feed-status[data-state=live]");
    expect(await page.$("#token")).toBeNull();

    // --- A plan arrives live; the lead rejects it with feedback. ------------------------
    const aliceInbox = follow(alice);
    const first = await alice.send({
      to: "team-lead",
      message: planRequest("1. delete src/parser\n2. rewrite it"),
    });
    const card = (id: string) => `#requests .request[data-request-id="${id}"]`;
    await page.waitForSelector(`${card(first.requestId)} >> text=delete src/parser`);
    // The feed shows the step once: the request's row, with the plan, and no message row.
    await page.waitForSelector("#feed li.event[data-kind=request] >> text=delete src/parser");
    expect(
      await page
        .locator("#feed li.event[data-kind=message]", { hasText: "delete src/parser" })
        .count(),
    ).toBe(0);
    await page.click(`${card(first.requestId)} button.reject`);
    await page.fill(`${card(first.requestId)} textarea.words`, "too risky: move it behind a flag");
    await page.click(`${card(first.requestId)} button.send-rejection`);
    await page.waitForSelector(card(first.requestId), { state: "detached" });
    const rejection = await aliceInbox.until(
      "the rejection",
      (e) => e.message?.kind.case === "planApprovalResponse" && e.requestId === first.requestId,
    );
    expect(rejection.message?.kind.value).toMatchObject({
      approve: false,
      feedback: "too risky: move it behind a flag",
    });

    // --- The resubmission is approved; alice inherits the lead's mode. ------------------
    const second = await alice.send({
      to: "team-lead",
      message: planRequest("1. add the new parser behind a flag"),
    });
    await page.click(`${card(second.requestId)} button.approve`);
    await page.waitForSelector(card(second.requestId), { state: "detached" });
    const approval = await aliceInbox.until(
      "the approval",
      (e) => e.message?.kind.case === "planApprovalResponse" && e.requestId === second.requestId,
    );
    expect(approval.message?.kind.value).toMatchObject({
      approve: true,
      permissionMode: PermissionMode.ACCEPT_EDITS,
    });

    // --- A task claim: each kind's buttons send that kind's answer, to the claimant. -----
    const claim = await alice.send({
      to: "team-lead",
      message: { kind: { case: "taskClaimRequest", value: { taskId: "t-1", note: "" } } },
    });
    await page.waitForSelector(`${card(claim.requestId)}[data-kind=task_claim]`);
    await page.click(`${card(claim.requestId)} button.reject`);
    await page.fill(`${card(claim.requestId)} textarea.words`, "not before the parser");
    await page.click(`${card(claim.requestId)} button.send-rejection`);
    const claimRejection = await aliceInbox.until(
      "the claim's rejection",
      (e) => e.message?.kind.case === "taskClaimResponse" && e.requestId === claim.requestId,
    );
    expect(claimRejection.message?.kind.value).toMatchObject({
      approve: false,
      reason: "not before the parser",
    });
    const again = await alice.send({
      to: "team-lead",
      message: { kind: { case: "taskClaimRequest", value: { taskId: "t-1", note: "" } } },
    });
    await page.click(`${card(again.requestId)} button.approve`);
    await page.waitForSelector(card(again.requestId), { state: "detached" });
    expect((await alice.getTask({ taskId: "t-1" })).task?.owner).toBe("alice");
    await page.waitForSelector("#members tr[data-member=alice] .mode >> text=accept_edits");
    // Last seen: set by her calls (the server writes it in the background, so wait for it).
    await page.waitForFunction(() => {
      const cell = (globalThis as unknown as PageScope).document.querySelectorAll(
        "#members tr[data-member=alice] .last-seen",
      )[0];
      return cell !== undefined && cell.textContent !== "never";
    });

    // --- A refusal shows its rule's sentence (bob rejects a shutdown without a reason). -
    const asked = await lead.send({ to: "bob", message: shutdownRequest("all done") });
    const { page: bobPage, context: bobContext } = await openConsole(proxy.url, seen, problems);
    await signIn(bobPage, bobToken);
    // A teammate may not watch the team (watch-lead-or-observer): it sees its own inbox.
    await bobPage.waitForSelector("#inbox-status[data-state=live]");
    await bobPage.waitForSelector(`#inbox li.event[data-request-id="${asked.requestId}"]`);
    expect(await bobPage.$("#feed-status")).toBeNull();
    await bobPage.click(`${card(asked.requestId)} button.reject`);
    await bobPage.click(`${card(asked.requestId)} button.send-rejection`);
    const shown = await (
      await bobPage.waitForSelector(`${card(asked.requestId)} .refusal`)
    ).textContent();
    const sentence = (
      await refused(() =>
        bob.send({
          to: "team-lead",
          message: {
            kind: {
              case: "shutdownResponse",
              value: { requestId: asked.requestId, approve: false, reason: " " },
            },
          },
        }),
      )
    ).detail?.description;
    expect(sentence).toBeTruthy();
    expect(shown).toBe(`reason-on-reject: ${sentence}`);
    await bobPage.fill(
      `${card(asked.requestId)} textarea.words`,
      "the integration tests still run",
    );
    await bobPage.click(`${card(asked.requestId)} button.send-rejection`);
    await bobPage.waitForSelector(card(asked.requestId), { state: "detached" });
    await bobContext.close();

    // The lead's journal, filtered: bob's refused attempts, with their rule.
    await page.selectOption("#journal-member", "bob");
    await page.selectOption("#journal-outcome", "2"); // ATTEMPT_OUTCOME_REFUSED
    await page.waitForFunction(() => {
      const rows = Array.from(
        (globalThis as unknown as PageScope).document.querySelectorAll("#journal tbody tr"),
      );
      return (
        rows.length >= 2 &&
        rows.every(
          (r) =>
            r.getAttribute("data-outcome") === "refused" &&
            r.textContent?.includes("bob") &&
            r.textContent.includes("reason-on-reject"),
        )
      );
    });

    // And by request: everything tried on bob's shutdown request, by anyone (not alice's plans).
    await page.selectOption("#journal-member", "");
    await page.selectOption("#journal-outcome", "0"); // any
    await page.fill("#journal-request", asked.requestId);
    await page.click("#journal button[type=submit]");
    await page.waitForFunction((id) => {
      const rows = Array.from(
        (globalThis as unknown as PageScope).document.querySelectorAll("#journal tbody tr"),
      );
      return (
        rows.some((r) => r.getAttribute("data-outcome") === "accepted") &&
        rows.every((r) => r.textContent?.includes(id))
      );
    }, asked.requestId);

    // --- The page's connections are cut: the feed resumes from its cursor. --------------
    await proxy.cut();
    await page.waitForSelector("#feed-status:not([data-state=live])");
    await alice.send({ to: "team-lead", message: text("sent while the console was cut off") });
    await proxy.restore();
    await page.waitForSelector("#feed li.event >> text=sent while the console was cut off");
    await page.waitForSelector("#feed-status[data-state=live]");
    const connects = Number(await page.getAttribute("#feed-status", "data-connects"));
    expect(connects).toBeGreaterThanOrEqual(2);
    const afterCut = await positions(page);
    // Resumed, not restarted: no event twice (a restart from the start would repeat them all),
    // and the one sent during the cut is there (a restart from now would have lost it).
    expect(new Set(afterCut).size).toBe(afterCut.length);
    expect(
      await page
        .locator("#feed li.event", { hasText: "sent while the console was cut off" })
        .count(),
    ).toBe(1);

    // --- Force-stop: the lead stops alice; her stream ends. ------------------------------
    await page.click("#members tr[data-member=alice] button.stop");
    await page.click("#members tr[data-member=alice] button.confirm-stop");
    const end = await withTimeout("alice's stream to end", PAGE_WAIT_MS, aliceInbox.ended);
    expect(end?.code).toBe(Code.Unauthenticated);
    await page.waitForSelector("#members tr[data-member=alice] .status >> text=stopped");

    // --- An observer sees the same feed and can only watch. ------------------------------
    const waiting = await bob.send({ to: "team-lead", message: planRequest("1. tidy the docs") });
    await page.waitForSelector(`${card(waiting.requestId)} button.approve`);
    // The lead's feed is complete once it shows that send's row (its request, with the plan;
    // its message is folded into it): nothing happens in the team after it.
    await page.waitForSelector("#feed li.event[data-kind=request] >> text=tidy the docs");
    const { page: eyePage, context: eyeContext } = await openConsole(proxy.url, seen, problems);
    await signIn(eyePage, eyeToken);
    await eyePage.waitForSelector("#read-only");
    await eyePage.waitForSelector(`${card(waiting.requestId)} >> text=tidy the docs`);
    const leadFeed = (await positions(page)).sort();
    await eyePage.waitForFunction(
      (n) =>
        (globalThis as unknown as PageScope).document.querySelectorAll("#feed li.event").length >=
        n,
      leadFeed.length,
    );
    expect((await positions(eyePage)).sort()).toEqual(leadFeed);
    // No approve, reject, withdraw or stop buttons anywhere: the only button is sign-out
    // (and the buttons that only read: the journal's filter, search, and each message row,
    // which opens its thread).
    const buttons = await eyePage.$$eval("button:not(.opens-thread)", (all) =>
      all.map((b) => b.textContent?.trim()),
    );
    expect(buttons.sort()).toEqual(["Filter", "Refresh", "Search", "Sign out"]);
    // A hand-made write with the observer's token, from its page, is refused by the server.
    const write = await eyePage.evaluate(async () => {
      const page = globalThis as unknown as PageScope;
      const token = page.sessionStorage.getItem("team-protocols.token");
      const r = await page.fetch("/team.v1.TeamService/Send", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify({ to: "bob", message: { text: "hello from the observer" } }),
      });
      return { status: r.status, body: (await r.json()) as { code: string; message: string } };
    });
    expect(write.status).toBe(403);
    expect(write.body.code).toBe("permission_denied");
    expect(write.body.message).toMatch(/^observer-read-only: /);

    // --- Signing out forgets the token. -------------------------------------------------
    await eyePage.click("#sign-out");
    await eyePage.waitForSelector("#sign-in");
    expect(
      await eyePage.evaluate(() => (globalThis as unknown as PageScope).sessionStorage.length),
    ).toBe(0);
    await eyeContext.close();

    // --- Tokens: only in Authorization headers, never in a URL, a cookie or localStorage. -
    expect(
      await page.evaluate(() => (globalThis as unknown as PageScope).localStorage.length),
    ).toBe(0);
    expect(await page.evaluate(() => (globalThis as unknown as PageScope).document.cookie)).toBe(
      "",
    );
    expect(await leadContext.cookies()).toEqual([]);
    const calls = seen.filter((s) => new URL(s.url).pathname.startsWith("/team.v1.TeamService/"));
    expect(calls.length).toBeGreaterThan(10);
    for (const call of calls) {
      expect(call.headers.authorization, call.url).toMatch(/^Bearer tp_/);
      expect(call.headers.cookie, call.url).toBeUndefined();
    }
    for (const s of seen) {
      for (const token of [...tokens, "tp_not-a-real-token"]) expect(s.url).not.toContain(token);
    }

    // CONSOLE_ALLOWED_ORIGINS reached the server through main.ts: the named origin's
    // preflight is answered, another's is not.
    const preflight = (origin: string) =>
      fetch(`${server.url}/team.v1.TeamService/ListMembers`, {
        method: "OPTIONS",
        headers: { origin, "access-control-request-method": "POST" },
      });
    const allowed = await preflight(ALLOWED_ORIGIN);
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get("access-control-allow-origin")).toBe(ALLOWED_ORIGIN);
    expect((await preflight("https://other.example")).status).toBe(403);

    // DNS rebinding: the attacker's page came from rebind.test, whose name now points at us.
    // (Chromium refuses a page it fetched from a public address to call 127.0.0.1, its own
    // defence; here the page's document is what we answered for that name, so only ours
    // stands in the way.) Over plain http to such a name chromium sends no Sec-Fetch-*, so
    // the console's page itself loads: harmless, it holds nothing. Its CreateTeam is "same
    // origin" and carries an Origin, as every POST does: refused for the name.
    const port = new URL(server.url).port;
    const rebinding = await chromium.browser.newContext();
    const evil = await rebinding.newPage();
    await evil.goto(`http://${REBOUND_NAME}:${port}/`);
    const stolenTeam = `rebind-${Date.now()}`;
    const attempt = await evil.evaluate(async (team) => {
      const answer = await fetch("/team.v1.TeamService/CreateTeam", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ team }),
      });
      return { status: answer.status, text: await answer.text() };
    }, stolenTeam);
    expect(attempt.status).toBe(403);
    expect(attempt.text).toMatch(/ALLOWED_HOSTS/);
    // Nothing was created: the name is still free.
    await client().createTeam({ team: stolenTeam });
    // A name the operator listed (ALLOWED_HOSTS, through main.ts) serves the console.
    const listed = await rebinding.newPage();
    const loaded = await listed.goto(`http://${LISTED_NAME}:${port}/`);
    expect(loaded?.status()).toBe(200);
    await listed.waitForSelector("#token");
    await rebinding.close();

    // Nothing the page did broke its Content-Security-Policy or threw.
    expect(problems).toEqual([]);
    await leadContext.close();
  } finally {
    await proxy.close();
  }
}, 300_000);
