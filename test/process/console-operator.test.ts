import { createClient } from "@connectrpc/connect";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { expect, it } from "vitest";
import {
  MemberRole,
  MemberStatus,
  PermissionMode,
  RequestStatus,
} from "../../gen/team/v1/enums_pb.js";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { startServer, tempDataDir } from "../support/child-server.js";
import { PAGE_WAIT_MS, useChromium } from "../support/console-browser.js";
import { transportFor } from "../support/harness.js";
import { inbox, requestRecord, shutdownResponse } from "../support/protocol-helpers.js";
import { assign } from "../support/task-helpers.js";
import { startTcpProxy } from "../support/tcp-proxy.js";

/**
 * The console for the operator, in chromium against the server as a process: the lead writes
 * to a member and to everyone, asks a teammate to stop (the shutdown protocol) beside the
 * forceful Stop, adds members and copies what they need; the feed shows each protocol step
 * once, with its date; a teammate signed in sees its own inbox and the tasks. Every wait is
 * for an element; nothing sleeps.
 */

const chromium = useChromium();

const row = (name: string) => `#members tr[data-member="${name}"]`;
const DATE_TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

it("the operator's console: writes and broadcasts, asks to stop, adds members with their configuration; the feed shows a step once; a teammate sees its inbox and tasks", async () => {
  const server = await startServer({ DATA_DIR: await tempDataDir() });
  const client = (token?: string) =>
    createClient(TeamService, transportFor(server.url, "connect", token));
  const problems: string[] = [];
  const created = await client().createTeam({ team: "ops" });
  const lead = client(created.token);
  const alice = client((await lead.addMember({ name: "alice" })).token);

  const page = await chromium.signedIn(server.url, created.token, problems, { clipboard: true });
  await page.waitForSelector("#feed-status[data-state=live]");
  await page.waitForSelector(`${row("alice")} .status >> text=active`);

  // --- Writing: to alice, then to everyone. --------------------------------------------
  await page.selectOption("#compose select[name=to]", "alice");
  await page.fill("#compose textarea[name=text]", "please look at the parser");
  await page.click("#compose button.send");
  await page.waitForSelector("#compose .sent >> text=Sent to alice");
  await page.waitForSelector("#feed li.event[data-kind=message] >> text=please look at the parser");
  // An empty message is not sent; a refused one shows its rule.
  await page.click("#compose button.send");
  await page.waitForSelector("#compose .refusal >> text=Write something first");
  await page.fill("#compose textarea[name=text]", "x".repeat(70_000));
  await page.click("#compose button.send");
  await page.waitForSelector("#compose .refusal >> text=size-shape");

  // --- Adding members: a teammate in plan mode, an observer; a taken name is refused. ---
  await page.fill("#add-member input[name=name]", "bob");
  await page.selectOption("#add-member select[name=mode]", String(PermissionMode.PLAN));
  await page.click("#add-member button.add");
  await page.waitForSelector('#add-member .new-member[data-member="bob"]');
  const bobToken = (await page.textContent("#add-member [data-copy=token] pre"))?.trim() ?? "";
  expect(bobToken).toMatch(/^tp_/);
  const bob = client(bobToken);
  const bobSelf = await bob.listMembers({});
  expect(bobSelf.you).toBe("bob");
  expect(bobSelf.members.find((m) => m.name === "bob")).toMatchObject({
    role: MemberRole.TEAMMATE,
    permissionMode: PermissionMode.PLAN,
  });
  // Copy puts the token on the clipboard.
  await page.click("#add-member [data-copy=token] button.copy");
  await page.waitForSelector("#add-member [data-copy=token] .said >> text=copied");
  expect(await page.evaluate("navigator.clipboard.readText()")).toBe(bobToken);
  // The MCP configuration is the server's /mcp with bob's token: an MCP client using it as
  // is lists the tools, as bob.
  const config = JSON.parse(
    (await page.textContent("#add-member [data-copy=mcp-config] pre")) ?? "",
  ) as { mcpServers: { team: { type: string; url: string; headers: Record<string, string> } } };
  expect(config.mcpServers.team).toEqual({
    type: "http",
    url: `${server.url}/mcp`,
    headers: { Authorization: `Bearer ${bobToken}` },
  });
  const mcp = new Client({ name: "operator-test", version: "1" });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(config.mcpServers.team.url), {
      requestInit: { headers: config.mcpServers.team.headers },
    }),
  );
  try {
    const who = await mcp.callTool({ name: "whoami", arguments: {} });
    expect(JSON.stringify(who.structuredContent)).toContain('"bob"');
  } finally {
    await mcp.close();
  }
  // The team up entry: the member's fields and where its token goes.
  const entry = (await page.textContent("#add-member [data-copy=team-up] pre")) ?? "";
  expect(entry).toContain("  - name: bob\n    permission_mode: plan\n");
  expect(entry).not.toContain("role:");
  expect(entry).toContain(
    `mkdir -p .team/ops/members/bob && (umask 077 && echo '${bobToken}' > .team/ops/members/bob/token)`,
  );
  // Closing the box forgets the token.
  await page.click("#add-member .new-member button.close");
  await page.waitForSelector("#add-member .new-member", { state: "detached" });
  expect(await page.content()).not.toContain(bobToken);
  await page.waitForSelector(`${row("bob")} .mode >> text=plan`);

  await page.fill("#add-member input[name=name]", "eye");
  await page.selectOption("#add-member select[name=role]", String(MemberRole.OBSERVER));
  await page.click("#add-member button.add");
  await page.waitForSelector("#add-member [data-copy=team-up] pre >> text=role: observer");
  await page.click("#add-member .new-member button.close");
  await page.fill("#add-member input[name=name]", "alice");
  await page.selectOption("#add-member select[name=role]", String(MemberRole.TEAMMATE));
  await page.click("#add-member button.add");
  await page.waitForSelector("#add-member .refusal >> text=already_exists");

  // Broadcast: every other active member gets it (alice and bob; an observer receives no
  // messages, and is not offered as an addressee either).
  expect(
    await page.$$eval("#compose select[name=to] option", (all) => all.map((o) => o.textContent)),
  ).toEqual(["alice", "bob", "everyone (broadcast)"]);
  await page.selectOption("#compose select[name=to]", "*");
  await page.fill("#compose textarea[name=text]", "all hands at noon");
  await page.click("#compose button.send");
  await page.waitForSelector("#compose .sent >> text=Sent to everyone (2 inboxes)");
  for (const member of [alice, bob]) {
    const texts = (await inbox(member)).map((e) => ({ from: e.from, to: e.to, m: e.message }));
    expect(texts).toContainEqual({
      from: "team-lead",
      to: "*",
      m: expect.objectContaining({ kind: { case: "text", value: "all hands at noon" } }),
    });
  }
  expect((await inbox(alice)).map((e) => e.message?.kind.value)).toContain(
    "please look at the parser",
  );

  // --- A teammate signs in: its own inbox, live, and the tasks; no refusal pill. -------
  // (Through a TCP proxy, so that its connections can be cut.)
  const proxy = await startTcpProxy(Number(new URL(server.url).port));
  const bobPage = await chromium.signedIn(proxy.url, bobToken, problems, { clipboard: true });
  await bobPage.waitForSelector("#inbox-status[data-state=live]");
  expect(await bobPage.$("#feed")).toBeNull();
  await bobPage.waitForSelector("#inbox li.event >> text=all hands at noon");
  await lead.createTask({ subject: "Fix the parser" });
  await bobPage.waitForSelector('#tasks .task-card[data-task-id="1"] >> text=Fix the parser');
  // Assigned to bob: the message arrives live and the board follows it.
  await lead.send({ to: "bob", message: assign("1") });
  await bobPage.waitForSelector("#inbox li.event >> text=task_assign 1");
  await bobPage.waitForSelector(
    '#tasks .column-tasks[data-column=in_progress] .task-card[data-task-id="1"] .owner >> text=owner bob',
  );
  // Its connections are cut: the inbox resumes after the last message received, so a message
  // sent meanwhile shows, once, and none shows twice.
  await proxy.cut();
  await bobPage.waitForSelector("#inbox-status:not([data-state=live])");
  await lead.send({ to: "bob", message: { kind: { case: "text", value: "sent during the cut" } } });
  await proxy.restore();
  await bobPage.waitForSelector("#inbox li.event >> text=sent during the cut");
  await bobPage.waitForSelector("#inbox-status[data-state=live]");
  const seqs = await bobPage.$$eval("#inbox li.event", (all) =>
    all.map((li) => li.getAttribute("data-seq")),
  );
  expect(new Set(seqs).size).toBe(seqs.length);
  expect(seqs.length).toBe((await inbox(bob)).length);
  expect(await bobPage.locator("#inbox li.event", { hasText: "sent during the cut" }).count()).toBe(
    1,
  );
  // bob writes to the lead from its page; the lead's feed shows it.
  await bobPage.selectOption("#compose select[name=to]", "team-lead");
  await bobPage.fill("#compose textarea[name=text]", "on it");
  await bobPage.click("#compose button.send");
  await bobPage.waitForSelector("#compose .sent >> text=Sent to team-lead");
  await page.waitForSelector("#feed li.event[data-kind=message] >> text=on it");
  // A teammate has no Stop, Ask to stop or Add member.
  expect(await bobPage.$("#members button.ask-stop, #members button.stop, #add-member")).toBeNull();

  // --- Ask to stop, beside the forceful Stop; the feed shows each step once. -----------
  await page.waitForSelector(`${row("alice")} button.stop`);
  expect(await page.$(`${row("eye")} button.ask-stop`)).toBeNull();
  await page.click(`${row("alice")} button.ask-stop`);
  // A refused request shows its rule in the row and sends nothing.
  await page.fill(`${row("alice")} input.reason`, "y".repeat(70_000));
  await page.click(`${row("alice")} button.send-ask`);
  await page.waitForSelector(`${row("alice")} .refusal >> text=size-shape`);
  expect((await inbox(alice)).some((e) => e.message?.kind.case === "shutdownRequest")).toBe(false);
  await page.fill(`${row("alice")} input.reason`, "the parser is done");
  await page.click(`${row("alice")} button.send-ask`);
  const asked = await page.getAttribute(`${row("alice")} .asked`, "data-request-id");
  expect(asked).toMatch(/^req_/);
  const requestId = asked ?? "";
  const shutdown = (await inbox(alice)).find((e) => e.requestId === requestId);
  expect(shutdown?.message?.kind).toEqual({
    case: "shutdownRequest",
    value: expect.objectContaining({ reason: "the parser is done" }),
  });
  // The lead may withdraw it from the requests panel.
  await page.waitForSelector(`#requests .request[data-request-id="${requestId}"] button.withdraw`);
  // One row for the request, none for its message; with the date.
  const stepRows = (kind: string) =>
    page.locator(`#feed li.event[data-kind=${kind}]`, { hasText: requestId });
  await page.waitForSelector(`#feed li.event[data-kind=request] >> text=the parser is done`);
  expect(await stepRows("request").count()).toBe(1);
  expect(
    await page
      .locator("#feed li.event[data-kind=message]", { hasText: "shutdown_request" })
      .count(),
  ).toBe(0);
  expect((await stepRows("request").first().locator("time").textContent())?.trim()).toMatch(
    DATE_TIME,
  );
  // alice agrees: one more row (approved), still no message row; she is stopped.
  await alice.send({ to: "team-lead", message: shutdownResponse(requestId, true) });
  await page.waitForSelector(`#feed li.event[data-kind=request] >> text=approved`);
  // Polled: the approved step may show (in the requests panel's row, or its text) a moment
  // before the feed's second row is counted (seen once in CI: 1 row at the first look).
  await expect.poll(() => stepRows("request").count(), { timeout: 10_000 }).toBe(2);
  expect(
    await page
      .locator("#feed li.event[data-kind=message]", { hasText: "shutdown_response" })
      .count(),
  ).toBe(0);
  expect((await requestRecord(lead, requestId)).status).toBe(RequestStatus.APPROVED);
  await page.waitForSelector(`${row("alice")} .status >> text=stopped`);
  expect(await page.$(`${row("alice")} button.ask-stop`)).toBeNull();
  // Every time in the feed has its date.
  const times = await page.$$eval("#feed li.event time", (all) => all.map((t) => t.textContent));
  expect(times.length).toBeGreaterThan(5);
  for (const t of times) expect(t).toMatch(DATE_TIME);

  // The forceful Stop still stands beside it: bob is removed at once.
  await page.click(`${row("bob")} button.stop`);
  await page.click(`${row("bob")} button.confirm-stop`);
  await page.waitForSelector(`${row("bob")} .status >> text=stopped`);
  expect((await lead.listMembers({})).members.find((m) => m.name === "bob")?.status).toBe(
    MemberStatus.STOPPED,
  );
  expect(problems).toEqual([]);
  await proxy.close();
}, 240_000);

it("a sign-in link (team console): the tab is signed in, the token is gone from the address bar, and a reload keeps the session", async () => {
  const server = await startServer({ DATA_DIR: await tempDataDir() });
  const created = await createClient(TeamService, transportFor(server.url, "connect")).createTeam({
    team: "linked",
  });
  const context = await chromium.browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(PAGE_WAIT_MS);
  const problems: string[] = [];
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  await page.goto(`${server.url}/#token=${encodeURIComponent(created.token)}`);
  await page.waitForSelector("#who >> text=team-lead");
  expect(page.url()).toBe(`${server.url}/`);
  expect(await page.evaluate("location.hash")).toBe("");
  await page.reload();
  await page.waitForSelector("#who >> text=team-lead");
  // A link with a token the server does not take signs nobody in.
  const stranger = await context.newPage();
  await stranger.goto(`${server.url}/#token=tp_not_a_real_token`);
  await stranger.waitForSelector("#sign-in");
  expect(stranger.url()).toBe(`${server.url}/`);
  expect(problems).toEqual([]);
  await context.close();
}, 120_000);
