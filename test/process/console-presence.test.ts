import { timestampDate } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { LeaseMode } from "../../gen/team/v1/enums_pb.js";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { startServer, tempDataDir } from "../support/child-server.js";
import { useChromium } from "../support/console-browser.js";
import { transportFor } from "../support/harness.js";

/**
 * Presence and leases in the console's Members view, in a real browser (Debian's chromium,
 * driven by playwright-core) against the server as a process with small presence windows
 * (online 3 s, offline after 8 s): a member seen once is shown online, then idle, then offline,
 * as the feed's presence events arrive; the team's leases are listed with resource, holder,
 * mode and expiry. Every wait is for an element; nothing sleeps.
 */

const chromium = useChromium();

it("the Members view shows each member's presence as it changes, and the team's leases", async () => {
  const server = await startServer({
    DATA_DIR: await tempDataDir(),
    PRESENCE_ONLINE_S: "3",
    PRESENCE_OFFLINE_S: "8",
  });
  const client = (token?: string) =>
    createClient(TeamService, transportFor(server.url, "connect", token));
  const problems: string[] = [];
  const created = await client().createTeam({ team: "presence" });
  const lead = client(created.token);
  const alice = client((await lead.addMember({ name: "alice" })).token);
  const bobToken = (await lead.addMember({ name: "bob" })).token;
  const lease = await alice.acquireLease({
    resource: "src/parser/**",
    mode: LeaseMode.EXCLUSIVE,
    ttlSeconds: 600,
    reason: "rewriting the lexer",
  });

  const page = await chromium.signedIn(server.url, created.token, problems, {
    ready: "#feed-status[data-state=live]",
  });
  const row = (name: string) => `#members tr[data-member=${name}]`;
  // bob was never seen.
  await page.waitForSelector(`${row("bob")} .presence >> text=offline`);
  await page.waitForSelector(`${row("bob")} .last-seen >> text=never`);

  // bob makes one call: online, then idle, then offline, each shown as its event arrives.
  await client(bobToken).listMembers({});
  await page.waitForSelector(`${row("bob")} .presence.online`);
  await page.waitForSelector(`${row("bob")} .last-seen >> text=(rpc)`);
  await page.waitForSelector(`${row("bob")} .presence.idle`);
  await page.waitForSelector(`${row("bob")} .presence.offline`);

  // The lease: resource, holder, mode, expiry.
  const leaseRow = `#leases tr[data-lease="${lease.lease?.leaseId}"]`;
  await page.waitForSelector(`${leaseRow} .resource >> text=src/parser/**`);
  expect(await page.textContent(`${leaseRow} .holder`)).toBe("alice");
  expect(await page.textContent(`${leaseRow} .lease-mode`)).toBe("exclusive");
  const expires = lease.lease?.expiresAt;
  expect(await page.getAttribute(`${leaseRow} .expires`, "title")).toBe(
    expires ? timestampDate(expires).toISOString() : "no expiry",
  );
  expect(problems).toEqual([]);
}, 180_000);
