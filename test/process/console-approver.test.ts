import { createClient } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { MemberRole, RequestStatus } from "../../gen/team/v1/enums_pb.js";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { startServer, tempDataDir } from "../support/child-server.js";
import { useChromium } from "../support/console-browser.js";
import { transportFor } from "../support/harness.js";
import { planRequest } from "../support/protocol-helpers.js";

/**
 * Permission requests and the approver in the console, in a real browser (Debian's chromium,
 * driven by playwright-core) against the server as a process: the lead sees a permission
 * request with Allow / Deny and denies it with a reason; an approver signed in sees the lead's
 * pending approvals with their buttons and answers them for the lead. Every wait is for an
 * element; nothing sleeps.
 */

const chromium = useChromium();

const card = (requestId: string) => `#requests .request[data-request-id="${requestId}"]`;

const permission = (runtimeRequestId: string) => ({
  kind: {
    case: "permissionRequest" as const,
    value: {
      toolName: "Bash",
      description: "delete build/",
      inputPreview: "rm -rf build",
      runtimeRequestId,
    },
  },
});

it("the console: Allow / Deny on a permission request; an approver answers the lead's approvals", async () => {
  const server = await startServer({ DATA_DIR: await tempDataDir() });
  const client = (token?: string) =>
    createClient(TeamService, transportFor(server.url, "connect", token));
  const problems: string[] = [];
  const created = await client().createTeam({ team: "approvals" });
  const lead = client(created.token);
  const alice = client((await lead.addMember({ name: "alice" })).token);
  const judgeToken = (await lead.addMember({ name: "judge", role: MemberRole.APPROVER })).token;

  // The lead denies a permission request, with a reason.
  const first = await alice.send({ to: "team-lead", message: permission("abcde") });
  const page = await chromium.signedIn(server.url, created.token, problems);
  await page.waitForSelector(`${card(first.requestId)} button.approve >> text=Allow`);
  await page.click(`${card(first.requestId)} button.reject >> text=Deny`);
  await page.fill(`${card(first.requestId)} textarea.words`, "not on this machine");
  await page.click(`${card(first.requestId)} button.send-rejection`);
  await page.waitForSelector(card(first.requestId), { state: "detached" });
  const denied = (await lead.getRequest({ requestId: first.requestId })).request;
  expect(denied?.status).toBe(RequestStatus.REJECTED);
  expect(denied?.response?.kind.value).toMatchObject({
    allow: false,
    reason: "not on this machine",
  });

  // Signed in as the approver: the lead's pending approvals, with their buttons.
  const second = await alice.send({ to: "team-lead", message: permission("fghij") });
  const plan = await alice.send({ to: "team-lead", message: planRequest("1. ship it") });
  const judge = await chromium.signedIn(server.url, judgeToken, problems);
  await judge.waitForSelector("#who >> text=approver");
  await judge.waitForSelector(`${card(second.requestId)} .on-behalf`);
  await judge.click(`${card(second.requestId)} button.approve >> text=Allow`);
  await judge.waitForSelector(card(second.requestId), { state: "detached" });
  await judge.click(`${card(plan.requestId)} button.approve >> text=Approve`);
  await judge.waitForSelector(card(plan.requestId), { state: "detached" });
  for (const id of [second.requestId, plan.requestId]) {
    const r = (await lead.getRequest({ requestId: id })).request;
    expect(r?.status, id).toBe(RequestStatus.APPROVED);
    expect(r?.answeredBy, id).toBe("judge");
  }
  // No lead-only controls for the approver, and no team feed (WatchTeam is not its): its own
  // inbox instead, live.
  expect(await judge.$("#new-task")).toBeNull();
  expect(await judge.$("#add-member, #members button.stop, #members button.ask-stop")).toBeNull();
  await judge.waitForSelector("#inbox-status[data-state=live]");
  expect(await judge.$("#feed")).toBeNull();
  expect(problems).toEqual([]);
}, 240_000);
