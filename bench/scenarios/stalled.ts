import { randomBytes } from "node:crypto";
import http2 from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { SubscribeRequestSchema } from "../../gen/team/v1/team_service_pb.js";
import { sleep, within } from "../bounded.js";
import { as, Connections } from "../connections.js";
import { grpcFrame } from "../h2load/grpc-body.js";
import { median } from "../histogram.js";
import { sampleValue, scrapeMetrics } from "../server-metrics.js";
import type { BenchServer } from "../server-process.js";
import { type BenchMember, createBenchTeam, text } from "../teams.js";

/** One run of the attack against a server with the given caps. */
export interface StalledRun {
  label: string;
  /** What the server was started with (unset: its defaults). */
  env: Record<string, string>;
  streams: number;
  connections: number;
  backlogBytes: number;
  backlogMessages: number;
  /** Streams the server holds open, stalled (team_subscriptions when it settled). */
  held: number;
  /** Refused by the per-member cap (ResourceExhausted, subscriptions-per-member), server's count. */
  refusedByMemberCap: number;
  /** The same as the client saw it (grpc-status 8). */
  refusedSeenByClient: number;
  /** Ended otherwise (reset, refused by HTTP/2): should be 0. */
  endedOtherwise: number;
  /** Server RSS before the streams and once they all stalled (median of samples). */
  rssBeforeBytes: number;
  rssAfterBytes: number;
  rssGrowthBytes: number;
  /** The same after a full GC in the server: what live objects hold. */
  rssAfterGcGrowthBytes: number;
  /** Message bytes the stalled streams still hold of their pages (the server's gauge). */
  pageBytesHeld: number;
  /** Pages read from the database by all the streams together. */
  pagesRead: number;
  /** Another member's ListMembers while the streams are stalled: it must still answer. */
  otherMemberCallMs: number;
  openMs: number;
}

export interface StalledResult {
  runs: StalledRun[];
}

export interface StalledProfile {
  streams: number;
  connections: number;
  backlogMessages: number;
  messageBytes: number;
  settleMs: number;
  budgetMs: number;
}

/** The two servers of the scenario: the defaults, and the caps raised to let every stream in. */
export const STALLED_VARIANTS = (streams: number, connections: number) => [
  { label: "default caps", env: {} },
  {
    label: "caps raised",
    env: {
      MAX_SUBSCRIPTIONS_PER_MEMBER: String(streams),
      MAX_STREAMS_PER_CONNECTION: String(Math.ceil(streams / connections)),
    },
  },
];

/**
 * The attack of issue #15 item 1, as found: one member opens `streams` Subscribe streams over
 * `connections` HTTP/2 connections and never reads (HTTP/2 windows stay at 0), over a backlog
 * of 2 MB or more. Reported: how many the per-member cap refused, how many the server holds,
 * and the server's RSS growth.
 */
export async function runStalled(
  p: StalledProfile,
  server: BenchServer,
  variant: { label: string; env: Record<string, string> },
  runId: string,
  log: (line: string) => void,
  signal: AbortSignal,
): Promise<StalledRun> {
  const setup = new Connections(server.url, 1);
  const sessions: http2.ClientHttp2Session[] = [];
  try {
    await setup.open();
    const team = await createBenchTeam(
      setup,
      runId,
      `stalled-${variant.label.replace(/[^a-z0-9]+/g, "-")}`,
      2,
      signal,
    );
    const [victim, other] = team.teammates as [BenchMember, BenchMember];
    // Random text (base64), so that nothing compresses the backlog away.
    const body = () => randomBytes(Math.floor((p.messageBytes * 3) / 4)).toString("base64");
    let backlogBytes = 0;
    for (let i = 0; i < p.backlogMessages; i += 20) {
      const batch = Array.from({ length: Math.min(20, p.backlogMessages - i) }, () => body());
      backlogBytes += batch.reduce((n, b) => n + b.length, 0);
      await Promise.all(
        batch.map((b) =>
          setup
            .client(0)
            .send({ to: victim.name, message: text(b) }, as(team.lead.token, { signal })),
        ),
      );
    }
    const metrics = () => scrapeMetrics(server.url, signal);
    const medianRss = async () => {
      const samples: number[] = [];
      for (let i = 0; i < 5; i++) {
        samples.push(await server.rssBytes());
        await sleep(200, signal);
      }
      return median(samples);
    };
    // RSS as it is, and after a full GC in the server (pages the GC freed given back).
    const readRss = async () => {
      await sleep(p.settleMs, signal);
      const asIs = await medianRss();
      await server.memoryAfterGc();
      await sleep(500, signal);
      return { asIs, afterGc: await medianRss() };
    };
    // A round before this one on the same server must have let go of its streams.
    await within(
      "the server to hold no subscription",
      30_000,
      (async () => {
        while (sampleValue(await metrics(), "team_subscriptions") > 0) await sleep(100, signal);
      })(),
      signal,
    );
    const before = await readRss();
    const pagesBefore = sampleValue(await metrics(), "team_subscribe_pages_read_total");
    const refusedBefore = sampleValue(
      await metrics(),
      'team_refusals_total{rule="subscriptions-per-member",kind="limit"}',
    );

    const started = performance.now();
    let refusedByMemberCap = 0;
    let endedOtherwise = 0;
    const request = grpcFrame(
      toBinary(SubscribeRequestSchema, create(SubscribeRequestSchema, { afterSeq: 0n })),
    );
    for (let c = 0; c < p.connections; c++) {
      // The client's session may hold many streams' worth of headers (Node's default is 10 MB).
      const s = http2.connect(server.url, { maxSessionMemory: 1_000 });
      s.on("error", () => {});
      sessions.push(s);
    }
    for (let i = 0; i < p.streams; i++) {
      const s = sessions[i % sessions.length] as http2.ClientHttp2Session;
      const stream = s.request({
        ":method": "POST",
        ":path": "/team.v1.TeamService/Subscribe",
        "content-type": "application/grpc",
        te: "trailers",
        authorization: `Bearer ${victim.token}`,
      });
      // Never read: paused, no 'data' listener; Node sends no WINDOW_UPDATE.
      stream.pause();
      stream.on("error", () => {});
      let status: string | undefined;
      const onStatus = (h: http2.IncomingHttpHeaders) => {
        const v = h["grpc-status"];
        if (v !== undefined) status = String(v);
      };
      stream.on("response", onStatus);
      stream.on("trailers", onStatus);
      stream.once("close", () => {
        if (status === "8") refusedByMemberCap++;
        else endedOtherwise++;
      });
      stream.end(request);
    }
    // Settled: every stream is either refused or held by the server, and each held one is
    // blocked (its writes wait for a client that does not read).
    let held = 0;
    await within(
      "every stream refused or stalled",
      120_000,
      (async () => {
        for (;;) {
          const now = await metrics();
          held = sampleValue(now, "team_subscriptions");
          const blocked = sampleValue(now, "team_subscribe_streams_blocked");
          if (held + refusedByMemberCap + endedOtherwise >= p.streams && blocked === held) return;
          await sleep(250, signal);
        }
      })(),
      signal,
    );
    const openMs = Math.round(performance.now() - started);
    const after = await readRss();
    const final = await metrics();
    const t0 = performance.now();
    await setup.client(0).listMembers({}, as(other.token, { signal }));
    const otherMemberCallMs = Math.round((performance.now() - t0) * 10) / 10;
    const run: StalledRun = {
      label: variant.label,
      env: variant.env,
      streams: p.streams,
      connections: p.connections,
      backlogBytes,
      backlogMessages: p.backlogMessages,
      held,
      refusedByMemberCap:
        sampleValue(final, 'team_refusals_total{rule="subscriptions-per-member",kind="limit"}') -
        refusedBefore,
      refusedSeenByClient: refusedByMemberCap,
      endedOtherwise,
      rssBeforeBytes: before.asIs,
      rssAfterBytes: after.asIs,
      rssGrowthBytes: after.asIs - before.asIs,
      rssAfterGcGrowthBytes: after.afterGc - before.afterGc,
      pageBytesHeld: sampleValue(final, "team_subscribe_page_bytes_held"),
      pagesRead: sampleValue(final, "team_subscribe_pages_read_total") - pagesBefore,
      otherMemberCallMs,
      openMs,
    };
    const mib = (b: number) => (b / 2 ** 20).toFixed(1);
    log(
      `  stalled (${variant.label}): ${run.held} held, ${run.refusedByMemberCap} refused by the ` +
        `member cap, ${run.endedOtherwise} ended otherwise; RSS +${mib(run.rssGrowthBytes)} MiB ` +
        `(after GC +${mib(run.rssAfterGcGrowthBytes)} MiB), ${run.pagesRead} pages read, ` +
        `${run.pageBytesHeld} page bytes held; another member's ListMembers ${otherMemberCallMs} ms`,
    );
    return run;
  } finally {
    for (const s of sessions) s.destroy();
    setup.close();
  }
}
