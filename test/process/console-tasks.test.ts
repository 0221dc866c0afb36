import { createClient } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { MemberRole, TaskProgress } from "../../gen/team/v1/enums_pb.js";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { startServer, tempDataDir } from "../support/child-server.js";
import { useChromium } from "../support/console-browser.js";
import { transportFor } from "../support/harness.js";
import { signoffRequest } from "../support/task-helpers.js";

/**
 * The console's Tasks board in a real browser (Debian's chromium, driven by playwright-core)
 * against the server as a process: the columns follow the server's task list live, and the
 * lead creates a task, assigns a ready one and approves a sign-off there. Every wait is for an
 * element; nothing sleeps.
 */

const chromium = useChromium();
const LIVE = "#feed-status[data-state=live]";

const card = (column: string, id: string) =>
  `#tasks .column-tasks[data-column=${column}] .task-card[data-task-id="${id}"]`;

it("the Tasks board: columns kept live; the lead creates, assigns and approves a sign-off; an observer only looks", async () => {
  const server = await startServer({ DATA_DIR: await tempDataDir() });
  const client = (token?: string) =>
    createClient(TeamService, transportFor(server.url, "connect", token));
  const problems: string[] = [];
  const created = await client().createTeam({ team: "board" });
  const lead = client(created.token);
  const alice = client((await lead.addMember({ name: "alice" })).token);
  await lead.addMember({ name: "bob" });
  const eyeToken = (await lead.addMember({ name: "eye", role: MemberRole.OBSERVER })).token;
  await lead.createTask({ subject: "Write the parser" });
  await lead.createTask({ subject: "Test the parser", blockedBy: ["1"] });
  await lead.createTask({ subject: "Document it", blockedBy: ["1"] });

  const page = await chromium.signedIn(server.url, created.token, problems, { ready: LIVE });
  await page.waitForSelector(`${card("ready", "1")} >> text=Write the parser`);
  await page.waitForSelector(`${card("blocked", "2")} .blockers >> text=waits on #1`);
  await page.waitForSelector(`${card("blocked", "3")} .owner >> text=no owner`);

  // The lead creates a task that waits on two others; one naming no task is refused in words.
  await page.fill("#new-task input[name=subject]", "Release it");
  await page.fill("#new-task input[name=blocked-by]", "2, nope");
  await page.click("#new-task button.create");
  await page.waitForSelector("#new-task .refusal >> text=task-exists");
  await page.fill("#new-task input[name=blocked-by]", "2, 3");
  await page.click("#new-task button.create");
  await page.waitForSelector(`${card("blocked", "4")} .blockers >> text=waits on #2, #3`);
  expect((await lead.getTask({ taskId: "4" })).task).toMatchObject({
    subject: "Release it",
    blockedBy: ["2", "3"],
    createdBy: "team-lead",
  });

  // Assigns the ready one to alice: it moves to In progress with its owner.
  await page.selectOption(`${card("ready", "1")} select.assignee`, "alice");
  await page.click(`${card("ready", "1")} button.assign`);
  await page.waitForSelector(`${card("in_progress", "1")} .owner >> text=owner alice`);
  // Blocked cards offer no assignment.
  expect(await page.$(`${card("blocked", "2")} button.assign`)).toBeNull();

  // alice asks for the sign-off (outside the console): the card moves to In review, live.
  await alice.send({ to: "team-lead", message: signoffRequest("1", "parser written") });
  await page.click(`${card("in_review", "1")} button.approve-signoff`);
  await page.waitForSelector(`${card("completed", "1")} .owner >> text=owner alice`);
  // Completing #1 made #2 and #3 ready; #4 still waits on both.
  await page.waitForSelector(card("ready", "2"));
  await page.waitForSelector(card("ready", "3"));
  await page.waitForSelector(`${card("blocked", "4")} .blockers >> text=waits on #2, #3`);
  expect((await lead.getTask({ taskId: "1" })).task?.status).toBe(TaskProgress.COMPLETED);
  // And the feed shows the task events.
  await page.waitForSelector("#feed li.event[data-kind=task] >> text=unblocked");

  // An observer sees the same board and nothing to act with.
  const eye = await chromium.signedIn(server.url, eyeToken, problems, { ready: LIVE });
  await eye.waitForSelector(card("completed", "1"));
  await eye.waitForSelector(card("ready", "2"));
  expect(await eye.$("#new-task")).toBeNull();
  expect(await eye.$("#tasks button")).toBeNull();
  expect(problems).toEqual([]);
}, 180_000);
