import http2 from "node:http2";
import perfHooks from "node:perf_hooks";
import { Code } from "@connectrpc/connect";
import { expect, it, vi } from "vitest";
import { RequestStatus } from "../../gen/team/v1/enums_pb.js";
import { describeEachDatabase, startTestEnv } from "../support/harness.js";
import { metricValue, scrapeMetrics } from "../support/metrics-scrape.js";
import { parsePrometheusText, type Scrape } from "../support/prometheus-text.js";
import { refused, shutdownRequest, shutdownResponse, text } from "../support/protocol-helpers.js";
import { subscriptionsAtMost } from "../support/subscribed.js";
import { openSubscription } from "../support/subscription-reader.js";

/** The same over HTTP/2, as a scraper with prior knowledge would. */
function scrapeOverH2(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url);
    session.on("error", reject);
    const req = session.request({ ":method": "GET", ":path": "/metrics" });
    let status = 0;
    let body = "";
    req.on("response", (h) => {
      status = Number(h[":status"]);
    });
    req.setEncoding("utf8");
    req.on("data", (c: string) => {
      body += c;
    });
    req.on("end", () => {
      session.close();
      resolve({ status, body });
    });
    req.on("error", reject);
    req.end();
  });
}

const scrape = scrapeMetrics;
const count = metricValue;

/** Every family docs/operations.md documents, with its type. */
const FAMILIES: Record<string, string> = {
  team_rpc_calls_total: "counter",
  team_refusals_total: "counter",
  team_send_duration_seconds: "histogram",
  team_delivery_latency_seconds: "histogram",
  team_subscribe_pages_read_total: "counter",
  team_watch_pages_total: "counter",
  team_subscribe_streams_blocked: "gauge",
  team_subscribe_page_bytes_held: "gauge",
  team_http_connections: "gauge",
  team_http2_streams: "gauge",
  team_subscriptions: "gauge",
  team_inbox_backlog_messages: "gauge",
  team_inbox_backlog_max_messages: "gauge",
  team_protocol_requests: "gauge",
  team_metrics_database_up: "gauge",
  team_db_pool_connections: "gauge",
  nodejs_eventloop_lag_seconds: "gauge",
  nodejs_eventloop_lag_p99_seconds: "gauge",
  process_resident_memory_bytes: "gauge",
};

describeEachDatabase(
  "/metrics",
  (env, kind) => {
    const url = () => env().server.url;

    it("serves every documented family in the Prometheus text format, over HTTP/1.1 and HTTP/2", async () => {
      const s = await scrape(url());
      for (const [family, type] of Object.entries(FAMILIES)) {
        expect(s.type(family), family).toBe(type);
      }
      expect(count(s, "team_metrics_database_up")).toBe(1);
      const h2 = await scrapeOverH2(url());
      expect(h2.status).toBe(200);
      expect(parsePrometheusText(h2.body).type("team_rpc_calls_total")).toBe("counter");
    });

    it("refusals count under their rule (rules table) and their limit; calls by method and code", async () => {
      const t = await env().team("worker");
      const before = await scrape(url());
      // The rules table: a structured message to "*".
      const broadcast = await refused(() =>
        t.lead.send({ to: "*", message: shutdownRequest("everyone") }),
      );
      expect(broadcast.detail?.rule).toBe("no-broadcast");
      // A stateful rule, inside the transaction: reason-on-reject.
      const asked = await t.lead.send({ to: "worker", message: shutdownRequest() });
      const worker = t.member("worker").client;
      await refused(() =>
        worker.send({ to: "team-lead", message: shutdownResponse(asked.requestId, false) }),
      );
      // A limit: the suite allows 3 subscriptions per member; the 4th is refused (gRPC,
      // served by the fast path, which passes no interceptor).
      const grpcWorker = env().client(t.member("worker").token, "grpc");
      const open = [0, 1, 2].map(() => openSubscription(grpcWorker));
      for (const s of open) await s.next();
      const fourth = await refused(async () => {
        for await (const _ of grpcWorker.subscribe({})) break;
      });
      expect(fourth.code).toBe(Code.ResourceExhausted);
      expect(fourth.detail?.rule).toBe("subscriptions-per-member");
      for (const s of open) s.close();
      await subscriptionsAtMost(env().app, 0);

      const after = await scrape(url());
      const delta = (labels: Record<string, string>, name = "team_refusals_total") =>
        count(after, name, labels) - count(before, name, labels);
      expect(delta({ rule: "no-broadcast", kind: "rule" })).toBe(1);
      expect(delta({ rule: "reason-on-reject", kind: "rule" })).toBe(1);
      expect(delta({ rule: "subscriptions-per-member", kind: "limit" })).toBe(1);
      const calls = (method: string, code: string) =>
        delta({ method, code }, "team_rpc_calls_total");
      expect(calls("Send", "invalid_argument")).toBe(2);
      expect(calls("Send", "ok")).toBe(1);
      expect(calls("Subscribe", "resource_exhausted")).toBe(1);
      // The three streams the client closed.
      expect(calls("Subscribe", "canceled")).toBe(3);
    });

    for (const protocol of ["connect", "grpc"] as const) {
      it(`${protocol}: an AwaitRequest its client cancelled counts as canceled, not ok`, async () => {
        const t = await env().team("worker");
        const asked = await t.lead.send({ to: "worker", message: shutdownRequest() });
        const labels = { method: "AwaitRequest", code: "canceled" };
        const before = count(await scrape(url()), "team_rpc_calls_total", labels);
        const lead = env().client(t.leadToken, protocol);
        const stop = new AbortController();
        const waiting = lead
          .awaitRequest({ requestId: asked.requestId }, { signal: stop.signal })
          .catch(() => "cancelled");
        await new Promise((r) => setTimeout(r, 300));
        stop.abort();
        expect(await waiting).toBe("cancelled");
        const deadline = Date.now() + 10_000;
        let after = before;
        while (after === before && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 50));
          after = count(await scrape(url()), "team_rpc_calls_total", labels);
        }
        expect(after).toBe(before + 1);
        const ok = count(await scrape(url()), "team_rpc_calls_total", {
          method: "AwaitRequest",
          code: "ok",
        });
        expect(ok).toBe(0);
      });
    }

    for (const [protocol, header] of [
      ["connect", { "connect-timeout-ms": "1" }],
      ["grpc", { "grpc-timeout": "1m" }],
    ] as const) {
      it(`${protocol}: an AwaitRequest answered at its deadline counts as ok, however the deadline's timer and the answer race`, async () => {
        // A 1 ms deadline: the handler answers the pending record at once, and the deadline's
        // timer fires before or after that answer by chance. The client is told OK either way,
        // so the count must say ok either way (it once said deadline_exceeded when the timer won).
        const t = await env().team("worker");
        const asked = await t.lead.send({ to: "worker", message: shutdownRequest() });
        const lead = env().client(t.leadToken, protocol);
        const calls = (after: Scrape, code: string) =>
          count(after, "team_rpc_calls_total", { method: "AwaitRequest", code });
        const before = await scrape(url());
        const rounds = 30;
        for (let i = 0; i < rounds; i++) {
          const res = await lead.awaitRequest({ requestId: asked.requestId }, { headers: header });
          expect(res.request?.status).toBe(RequestStatus.PENDING);
        }
        const after = await scrape(url());
        expect(calls(after, "ok") - calls(before, "ok")).toBe(rounds);
        expect(calls(after, "deadline_exceeded") - calls(before, "deadline_exceeded")).toBe(0);
      });
    }

    it("the send-rate limit counts as a limit", async () => {
      const t = await env().team("flooded");
      const before = await scrape(url());
      // The suite's bucket: bursts of 5, then 1 a second.
      let refusals = 0;
      for (let i = 0; i < 8; i++) {
        await t.lead.send({ to: "flooded", message: text(`${i}`) }).catch(() => refusals++);
      }
      expect(refusals).toBeGreaterThan(0);
      const after = await scrape(url());
      const labels = { rule: "send-rate", kind: "limit" };
      expect(
        count(after, "team_refusals_total", labels) - count(before, "team_refusals_total", labels),
      ).toBe(refusals);
    });

    it("a subscription raises the gauges (subscriptions, HTTP/2 streams and connections) and its end lowers them", async () => {
      const t = await env().team("watcher");
      const before = await scrape(url());
      expect(count(before, "team_subscriptions")).toBe(0);
      const sub = openSubscription(env().client(t.member("watcher").token, "grpc"));
      await sub.next();
      const during = await scrape(url());
      expect(count(during, "team_subscriptions")).toBe(1);
      // The subscription's stream (the scrape itself is HTTP/1.1).
      expect(count(during, "team_http2_streams")).toBeGreaterThanOrEqual(1);
      expect(count(during, "team_http_connections", { http_version: "2" })).toBeGreaterThanOrEqual(
        1,
      );
      // This scrape's own connection.
      expect(
        count(during, "team_http_connections", { http_version: "1.1" }),
      ).toBeGreaterThanOrEqual(1);
      sub.close();
      await subscriptionsAtMost(env().app, 0);
      const after = await scrape(url());
      expect(count(after, "team_subscriptions")).toBe(0);
      expect(count(after, "team_http2_streams")).toBe(count(during, "team_http2_streams") - 1);
    });

    it("send and delivery latency histograms count each send and each live delivery", async () => {
      const t = await env().team("listener");
      const sub = openSubscription(env().client(t.member("listener").token));
      // A heartbeat: the backlog is read, what comes now is live.
      await sub.next();
      const before = await scrape(url());
      for (let i = 0; i < 3; i++) await t.lead.send({ to: "listener", message: text(`live ${i}`) });
      await sub.envelopes(3);
      await t.lead.send({ to: "listener", message: text("last") });
      await sub.envelopes(1);
      sub.close();
      await subscriptionsAtMost(env().app, 0);
      const after = await scrape(url());
      const d = (name: string) => count(after, name) - count(before, name);
      expect(d("team_send_duration_seconds_count")).toBe(4);
      expect(d("team_send_duration_seconds_sum")).toBeGreaterThan(0);
      // Each live message is counted once it was written out (the stream then pulls the next).
      expect(d("team_delivery_latency_seconds_count")).toBe(4);
      expect(
        count(after, "team_delivery_latency_seconds_bucket", { le: "+Inf" }) -
          count(before, "team_delivery_latency_seconds_bucket", { le: "+Inf" }),
      ).toBe(d("team_delivery_latency_seconds_count"));
    });

    it("the inbox backlog follows sends and acks; protocol requests by status follow their answers", async () => {
      const t = await env().team("behind");
      const behind = t.member("behind").client;
      const before = await scrape(url());
      for (let i = 0; i < 4; i++) await t.lead.send({ to: "behind", message: text(`${i}`) });
      const asked = await t.lead.send({ to: "behind", message: shutdownRequest("done?") });
      const mid = await scrape(url());
      expect(
        count(mid, "team_inbox_backlog_messages") - count(before, "team_inbox_backlog_messages"),
      ).toBe(5);
      expect(count(mid, "team_inbox_backlog_max_messages")).toBeGreaterThanOrEqual(5);
      const pending = (s: Scrape) => count(s, "team_protocol_requests", { status: "pending" });
      const rejected = (s: Scrape) => count(s, "team_protocol_requests", { status: "rejected" });
      expect(pending(mid) - pending(before)).toBe(1);

      await behind.ack({ seq: 5n });
      await behind.send({
        to: "team-lead",
        message: shutdownResponse(asked.requestId, false, "not yet"),
      });
      const after = await scrape(url());
      // Its 5 acked; the lead's inbox holds the answer, unacked.
      expect(
        count(after, "team_inbox_backlog_messages") - count(mid, "team_inbox_backlog_messages"),
      ).toBe(-4);
      expect(pending(after) - pending(mid)).toBe(-1);
      expect(rejected(after) - rejected(mid)).toBe(1);
    });

    it("the database pool and the event-loop delay are reported", async () => {
      const s = await scrape(url());
      const total = count(s, "team_db_pool_connections", { state: "total" });
      const idle = count(s, "team_db_pool_connections", { state: "idle" });
      if (kind === "embedded") expect(total).toBe(1);
      else expect(total).toBeGreaterThanOrEqual(1);
      expect(idle).toBeGreaterThanOrEqual(0);
      expect(idle).toBeLessThanOrEqual(total);
      expect(count(s, "team_db_pool_connections", { state: "waiting" })).toBeGreaterThanOrEqual(0);
      expect(s.value("nodejs_eventloop_lag_seconds")).toBeGreaterThanOrEqual(0);
    });

    it("labels hold no team, member, token or client input, whatever the calls named", async () => {
      const t = await env().team("quiet");
      const hostile = `x${"y".repeat(70)}`;
      await refused(() => t.lead.send({ to: hostile, message: text("hi") }));
      await refused(() => t.lead.send({ to: "nobody-here", message: text("hi") }));
      const body = await (await fetch(`${url()}/metrics`)).text();
      for (const secret of [t.name, t.leadToken, t.member("quiet").token, hostile, "nobody-here"]) {
        expect(body).not.toContain(secret);
      }
      const s = parsePrometheusText(body);
      // Every label value of ours is one the code fixes: methods, codes, rules, versions,
      // states, bucket bounds.
      for (const e of s.entries.filter((e) => e.name.startsWith("team_"))) {
        for (const v of Object.values(e.labels))
          expect(v).toMatch(/^(?:[a-z][a-z_-]*|[A-Z][A-Za-z]+|[0-9.e+-]+|\+Inf)$/);
      }
    });

    it("process metrics are collected once per process: apps started and closed leave no GC observer or event-loop monitor behind", async () => {
      // prom-client's default metrics start a GC PerformanceObserver and an event-loop delay
      // monitor that nothing can stop; one set per app leaked one set per app (tests start
      // hundreds). Counted at their source, perf_hooks.
      const gcObservers = vi.spyOn(perfHooks.PerformanceObserver.prototype, "observe");
      const loopMonitors = vi.spyOn(perfHooks, "monitorEventLoopDelay");
      try {
        for (let i = 0; i < 4; i++) {
          const other = await startTestEnv(env().kind, {
            db: env().db,
            url: undefined,
            dispose: async () => {},
          });
          await other.close();
        }
        const started = gcObservers.mock.calls.filter(([o]) =>
          JSON.stringify(o).includes('"gc"'),
        ).length;
        expect(started).toBe(0);
        expect(loopMonitors.mock.calls.length).toBe(0);
      } finally {
        vi.restoreAllMocks();
      }
      // Every app still shows them.
      const s = await scrape(url());
      expect(s.value("nodejs_eventloop_lag_seconds")).toBeGreaterThanOrEqual(0);
      expect(s.type("nodejs_gc_duration_seconds")).toBe("histogram");
      expect(s.type("process_resident_memory_bytes")).toBe("gauge");
    });

    it("with METRICS_TOKEN set, /metrics needs it; without, it is open", async () => {
      const guarded = await startTestEnv(
        env().kind,
        { db: env().db, url: undefined, dispose: async () => {} },
        { metricsToken: "scrape-secret" },
      );
      try {
        const get = (headers: Record<string, string>) =>
          fetch(`${guarded.server.url}/metrics`, { headers });
        expect((await get({})).status).toBe(401);
        expect((await get({ authorization: "Bearer wrong" })).status).toBe(401);
        const ok = await get({ authorization: "Bearer scrape-secret" });
        expect(ok.status).toBe(200);
        // The scheme is case-insensitive, as for every call's token.
        for (const scheme of ["bearer", "BEARER"]) {
          const res = await get({ authorization: `${scheme} scrape-secret` });
          expect(res.status, scheme).toBe(200);
          await res.text();
        }
        expect(parsePrometheusText(await ok.text()).type("team_subscriptions")).toBe("gauge");
        const post = await fetch(`${guarded.server.url}/metrics`, { method: "POST" });
        expect(post.status).toBe(405);
      } finally {
        await guarded.close();
      }
    });
  },
  // Heartbeats often: a stream's first event says it is open and live.
  { maxSubscriptionsPerMember: 3, sendRate: { perSecond: 1, burst: 5 }, heartbeatIntervalMs: 200 },
);
