/**
 * watch-observers: 40 observers of one team, each holding 16 WatchTeam streams that read
 * nothing (stalled: no WINDOW_UPDATE goes back), all opened at once over a feed of a few MB.
 * The per-team caps are lifted (MAX_OBSERVERS_PER_TEAM=0, MAX_WATCHES_PER_TEAM=0) so that
 * what 640 stalled feeds cost is measured, not the refusal. Figures: the server's RSS growth
 * (target ≤ +100 MiB), how the streams ended by the slow-consumer cut (30 s), and how long
 * /metrics and a fresh call took meanwhile.
 */
import http2 from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { MemberRole } from "../gen/team/v1/enums_pb.js";
import { WatchTeamRequestSchema } from "../gen/team/v1/team_service_pb.js";
import { sleep } from "./bounded.js";
import { as, Connections } from "./connections.js";
import { type HostileRun, hostileTeam, log, mib, percentile, seconds } from "./hostile-common.js";
import { text } from "./teams.js";

const OBSERVERS = 40;
const FEEDS_PER_OBSERVER = 16;
const BACKLOG = 300;
const BODY_CHARS = 8 * 1024;
const HOLD_MS = 40_000;

/**
 * A WatchTeam stream from the start of the feed that never reads; resolves how it ended.
 * `served` is called when its response headers come (the server wrote its first event).
 */
function stalledWatch(
  session: http2.ClientHttp2Session,
  token: string,
  served: () => void,
): Promise<string> {
  const stream = session.request({
    ":method": "POST",
    ":path": "/team.v1.TeamService/WatchTeam",
    authorization: `Bearer ${token}`,
    "content-type": "application/grpc",
    te: "trailers",
  });
  stream.on("error", () => {});
  stream.pause();
  const request = toBinary(WatchTeamRequestSchema, create(WatchTeamRequestSchema, {}));
  const head = Buffer.alloc(5);
  head.writeUInt32BE(request.byteLength, 1);
  stream.end(Buffer.concat([head, Buffer.from(request)]));
  let status = "";
  stream.on("response", (h) => {
    if (h["grpc-status"] !== undefined) status = `grpc-status ${h["grpc-status"]}`;
    else served();
  });
  stream.on("trailers", (h) => {
    status = `grpc-status ${h["grpc-status"]}`;
  });
  return new Promise((resolve) =>
    stream.once("close", () => resolve(status || `rst ${stream.rstCode}`)),
  );
}

export async function watchObservers(run: HostileRun): Promise<string[]> {
  const server = await run.start({ MAX_OBSERVERS_PER_TEAM: "0", MAX_WATCHES_PER_TEAM: "0" });
  const team = await hostileTeam(server);
  const connections = new Connections(server.url, 4);
  await connections.open();
  const lead = team.lead.token;
  const mate = team.teammates[0]?.name as string;
  const body = "x".repeat(BODY_CHARS);
  for (let i = 0; i < BACKLOG; i++) {
    await connections.client(i).send({ to: mate, message: text(`${i} ${body}`) }, as(lead));
  }
  const observers: string[] = [];
  for (let i = 0; i < OBSERVERS; i++) {
    const added = await connections
      .client(i)
      .addMember({ name: `eye${i}`, role: MemberRole.OBSERVER }, as(lead));
    observers.push(added.token);
  }
  await sleep(1_000);
  const rss0 = await server.rssBytes();
  const cpu0 = (await server.cpuMs()) ?? 0;
  const usage0 = await server.probeReport();
  log(`${OBSERVERS} observers, ${BACKLOG} messages of ${BODY_CHARS} B in the feed; opening`);
  const sessions = observers.map(() => {
    const s = http2.connect(server.url);
    s.on("error", () => {});
    return s;
  });
  const endings: Promise<string>[] = [];
  let served = 0;
  sessions.forEach((session, i) => {
    for (let k = 0; k < FEEDS_PER_OBSERVER; k++) {
      endings.push(
        stalledWatch(session, observers[i] as string, () => {
          served++;
        }),
      );
    }
  });
  const all = Promise.all(endings);
  // Meanwhile: RSS, /metrics and a fresh ListMembers, once a second.
  const metricsMs: number[] = [];
  const callMs: number[] = [];
  const callFailures: string[] = [];
  let rssPeak = rss0;
  const t0 = performance.now();
  while (performance.now() - t0 < HOLD_MS) {
    const s0 = performance.now();
    await fetch(`${server.url}/metrics`).then((r) => r.text());
    metricsMs.push(performance.now() - s0);
    const c0 = performance.now();
    try {
      await connections.client(0).listMembers({}, as(lead));
      callMs.push(performance.now() - c0);
    } catch (err) {
      // Counted, not fatal: on PostgreSQL a call may meet Unavailable (the pool was full).
      callFailures.push(String((err as Error).message).slice(0, 80));
    }
    rssPeak = Math.max(rssPeak, await server.rssBytes());
    await sleep(1_000);
  }
  const cpu = ((await server.cpuMs()) ?? 0) - cpu0;
  const usage = await server.probeReport();
  const delay = usage.eventLoopDelay;
  const servedInTime = served;
  const metricsText = await fetch(`${server.url}/metrics`).then((r) => r.text());
  const pageBytesHeld = /^team_watch_page_bytes_held (\S+)$/m.exec(metricsText)?.[1] ?? "?";
  // Pages read from the database, and pages streams got by sharing a read (absent on a
  // server before shared page reads).
  const pages = (source: string) =>
    new RegExp(`^team_watch_pages_total\\{source="${source}"\\} (\\S+)$`, "m").exec(
      metricsText,
    )?.[1] ?? "?";
  for (const s of sessions) s.destroy();
  const ends = await all;
  connections.close();
  const hows = new Map<string, number>();
  for (const how of ends) hows.set(how, (hows.get(how) ?? 0) + 1);
  return [
    `${OBSERVERS} observers × ${FEEDS_PER_OBSERVER} stalled WatchTeam streams over a feed of ` +
      `${BACKLOG} × ${BODY_CHARS / 1024} KiB, held ${seconds(HOLD_MS)}: server RSS ${mib(rss0)} -> ` +
      `peak ${mib(rssPeak)} (+${mib(rssPeak - rss0)}); server CPU ${seconds(cpu)}, ` +
      `event-loop delay p99 ${delay.p99Ms.toFixed(0)} ms, longest ${delay.maxMs.toFixed(0)} ms`,
    `at the end of the hold: V8 heap used ${mib(usage0.heapUsed)} -> ${mib(usage.heapUsed)}, ` +
      `heap committed ${mib(usage0.heapTotal)} -> ${mib(usage.heapTotal)}, external ` +
      `${mib(usage0.external)} -> ${mib(usage.external)} (array buffers ` +
      `${mib(usage0.arrayBuffers)} -> ${mib(usage.arrayBuffers)}); ${servedInTime} of ` +
      `${endings.length} streams had their first event; page bytes held ${pageBytesHeld}; ` +
      `pages read from the database ${pages("database")}, shared ${pages("shared")}`,
    `meanwhile /metrics took median ${percentile(metricsMs, 0.5).toFixed(0)} ms, longest ` +
      `${Math.max(...metricsMs).toFixed(0)} ms; a fresh ListMembers median ` +
      `${percentile(callMs, 0.5).toFixed(0)} ms, longest ${Math.max(...callMs).toFixed(0)} ms; ` +
      `${callFailures.length} of ${callMs.length + callFailures.length} failed` +
      (callFailures[0] ? ` (${callFailures[0]})` : ""),
    `streams ended: ${[...hows].map(([how, n]) => `${n}× ${how}`).join(", ")} ` +
      "(rst 0 or 8: closed by this client at the end; the slow-consumer cut is ENHANCE_YOUR_CALM, 11)",
  ];
}
