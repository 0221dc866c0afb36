/**
 * unfinished-bodies: thousands of HTTP/2 streams whose request bodies never finish (HEADERS
 * and the first bytes of a message, never END_STREAM), on gRPC, Connect and gRPC-Web, plus
 * a few bodies trickled a byte every 2 s. Each must be answered or reset within
 * REQUEST_TIMEOUT_MS of its headers (10 s here). Figures: per protocol how each ended and
 * when (median and longest, from the client's HEADERS), and the server's RSS.
 */
import http2 from "node:http2";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { TeamService } from "../gen/team/v1/team_service_pb.js";
import { sleep } from "./bounded.js";
import { type HostileRun, hostileTeam, mib, percentile, seconds } from "./hostile-common.js";

const TIMEOUT_MS = 10_000;
const CONNECTIONS = 20;
// MAX_STREAMS_PER_CONNECTION's default: every stream reaches the server at once (more would
// wait in the client, and its wait would be counted against the server).
const STREAMS_PER_CONNECTION = 256;
const TRICKLED = 60;

const PROTOCOLS = [
  { name: "gRPC", type: "application/grpc+proto" },
  { name: "Connect", type: "application/proto" },
  { name: "gRPC-Web", type: "application/grpc-web+proto" },
] as const;

interface Ending {
  protocol: string;
  ms: number;
  how: string;
}

/** One stream: headers, `first`, then (if `trickle`) a byte every 2 s; how and when it ended. */
function unfinished(
  session: http2.ClientHttp2Session,
  protocol: (typeof PROTOCOLS)[number],
  token: string,
  trickle: boolean,
): Promise<Ending> {
  const t0 = performance.now();
  // Connect unary has no envelope: its body is the message; the others announce 100 bytes.
  const first = protocol.name === "Connect" ? Buffer.of(0x0a) : Buffer.of(0, 0, 0, 0, 100, 0x0a);
  const stream = session.request({
    ":method": "POST",
    ":path": `/${TeamService.typeName}/Send`,
    "content-type": protocol.type,
    authorization: `Bearer ${token}`,
  });
  stream.on("error", () => {});
  stream.write(first);
  const trickler = trickle
    ? setInterval(() => {
        if (!stream.closed && !stream.destroyed) stream.write(Buffer.of(1));
      }, 2_000)
    : undefined;
  let status = "";
  stream.on("response", (h) => {
    status = String(
      h["grpc-status"] !== undefined ? `grpc-status ${h["grpc-status"]}` : h[":status"],
    );
  });
  stream.on("trailers", (h) => {
    if (h["grpc-status"] !== undefined) status = `grpc-status ${h["grpc-status"]}`;
  });
  stream.resume();
  return new Promise((resolve) =>
    stream.once("close", () => {
      clearInterval(trickler);
      const how = status
        ? `${status}${stream.rstCode ? ` rst ${stream.rstCode}` : ""}`
        : `rst ${stream.rstCode}`;
      resolve({ protocol: protocol.name, ms: performance.now() - t0, how });
    }),
  );
}

export async function unfinishedBodies(run: HostileRun): Promise<string[]> {
  const server = await run.start({
    REQUEST_TIMEOUT_MS: String(TIMEOUT_MS),
    HEADERS_TIMEOUT_MS: String(TIMEOUT_MS),
  });
  const team = await hostileTeam(server);
  const token = team.lead.token;
  await sleep(500);
  const rss0 = await server.rssBytes();
  const cpu0 = (await server.cpuMs()) ?? 0;
  await server.eventLoopDelay();
  // The client's own lag is in what it measures: said beside the figures.
  const clientDelay = monitorEventLoopDelay({ resolution: 10 });
  clientDelay.enable();
  const sessions = Array.from({ length: CONNECTIONS }, () => {
    const s = http2.connect(server.url);
    s.on("error", () => {});
    return s;
  });
  await Promise.all(sessions.map((s) => new Promise((r) => s.once("connect", r))));
  const endings: Promise<Ending>[] = [];
  let i = 0;
  for (const session of sessions) {
    for (let k = 0; k < STREAMS_PER_CONNECTION; k++, i++) {
      const protocol = PROTOCOLS[i % PROTOCOLS.length] as (typeof PROTOCOLS)[number];
      endings.push(unfinished(session, protocol, token, i < TRICKLED));
    }
  }
  let rssPeak = rss0;
  let done = false;
  const all = Promise.all(endings).finally(() => {
    done = true;
  });
  while (!done) {
    rssPeak = Math.max(rssPeak, await server.rssBytes());
    await Promise.race([all, sleep(1_000)]);
  }
  const results = await all;
  const rss1 = await server.rssBytes();
  const cpu = ((await server.cpuMs()) ?? 0) - cpu0;
  const delay = await server.eventLoopDelay();
  clientDelay.disable();
  for (const s of sessions) s.destroy();
  const lines = [
    `${results.length} unfinished Send streams (${CONNECTIONS} connections × ${STREAMS_PER_CONNECTION}, ` +
      `${TRICKLED} of them trickling a byte every 2 s), REQUEST_TIMEOUT_MS=${TIMEOUT_MS}: ` +
      `server RSS ${mib(rss0)} -> peak ${mib(rssPeak)} (+${mib(rssPeak - rss0)}), after ${mib(rss1)}; ` +
      `server CPU ${seconds(cpu)}, event-loop delay p99 ${delay.p99Ms.toFixed(0)} ms, ` +
      `longest ${delay.maxMs.toFixed(0)} ms (this client's longest ${(clientDelay.max / 1e6).toFixed(0)} ms)`,
  ];
  for (const protocol of PROTOCOLS) {
    const mine = results.filter((r) => r.protocol === protocol.name);
    const hows = new Map<string, number>();
    for (const r of mine) hows.set(r.how, (hows.get(r.how) ?? 0) + 1);
    const ms = mine.map((r) => r.ms);
    lines.push(
      `${protocol.name}: ${mine.length} streams ended after median ${seconds(percentile(ms, 0.5))}, ` +
        `p99 ${seconds(percentile(ms, 0.99))}, longest ${seconds(Math.max(...ms))}; ` +
        [...hows].map(([how, n]) => `${n}× ${how}`).join(", "),
    );
  }
  const late = results.filter((r) => r.ms > TIMEOUT_MS + 2_000).length;
  lines.push(`ended later than REQUEST_TIMEOUT_MS + 2 s: ${late} of ${results.length}`);
  return lines;
}
