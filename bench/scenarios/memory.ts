import { sleep, within } from "../bounded.js";
import { as, Connections } from "../connections.js";
import { median, round } from "../histogram.js";
import type { BenchServer } from "../server-process.js";
import { type OpenStream, openStream } from "../subscriber.js";
import { type BenchMember, createBenchTeam, text } from "../teams.js";
import type { ScenarioContext } from "./context.js";

/** The server process's memory at one moment. */
export interface MemoryReading {
  /** RSS once the process has been left alone for a while (no forced GC). */
  rssBytes: number;
  /** RSS after a full GC: what live objects hold, garbage excluded. */
  rssAfterGcBytes: number;
  /** V8 heap in use after the GC. */
  heapUsedBytes: number;
  /** V8 heap reserved (used or not) after the GC: what V8 keeps committed for growth. */
  heapTotalBytes: number;
  /** Memory outside the V8 heap (Buffers, native objects) after the GC. */
  externalBytes: number;
}

export interface MemoryLevel extends MemoryReading {
  /** Idle streams open (on top of the warm-up streams). */
  streams: number;
  /** Per stream, from RSS after GC over the warm-up reading: the headline figure. */
  bytesPerStream: number;
  /** Per stream, from RSS without a forced GC. */
  bytesPerStreamNoGc: number;
  /** Per stream, V8 heap only. */
  heapBytesPerStream: number;
  /** Time to open this level's new streams and see each deliver its first message. */
  openMs: number;
}

export interface MemoryResult {
  connections: number;
  warmupStreams: number;
  baseline: MemoryReading;
  levels: MemoryLevel[];
}

// Members per team: a team is one broadcast of setup, and realistic teams are not huge.
const TEAM_SIZE = 1_000;
const SAMPLES = 5;

/**
 * Memory of the server process per idle Subscribe stream, at each level of open streams.
 * Run against a server of its own (started fresh, with the probe of server-probe.ts), since
 * RSS rarely shrinks: whatever earlier scenarios grew would blur the delta.
 *
 * Every stream is a distinct member (as agents are), spread over several HTTP/2
 * connections that are opened before the first reading. Each inbox holds one message, so
 * a stream proves it is registered and idle by delivering it.
 */
export async function runMemory(
  ctx: ScenarioContext,
  server: Pick<BenchServer, "rssBytes" | "memoryAfterGc">,
): Promise<MemoryResult> {
  const p = ctx.profile.memory;
  const { signal } = ctx;
  const most = Math.max(...p.levels);
  const needed = p.warmupStreams + most + p.rehearsalStreams;
  const connections = new Connections(ctx.url, p.connections);
  const streams: OpenStream[] = [];
  try {
    await connections.open();
    const members: BenchMember[] = [];
    for (let t = 0; members.length < needed; t++) {
      const size = Math.min(TEAM_SIZE, needed - members.length);
      const team = await createBenchTeam(connections, ctx.runId, `memory${t}`, size, signal);
      await connections.client(t).send({ to: "*", message: text("hi") }, as(team.lead.token));
      members.push(...team.teammates);
      ctx.log(`  memory: ${members.length}/${needed} members`);
    }

    const openUpTo = async (count: number) => {
      while (streams.length < count) {
        const chunk = members.slice(streams.length, Math.min(count, streams.length + p.openChunk));
        const opened = chunk.map((m, i) =>
          openStream(connections.client(streams.length + i), m.token, () => {}, {
            afterSeq: 0n,
            signal,
          }),
        );
        streams.push(...opened);
        await within(
          `${opened.length} streams to be live`,
          30_000,
          Promise.all(opened.map((s) => s.firstEnvelope)),
          signal,
        );
      }
    };
    const medianRss = async () => {
      const samples: number[] = [];
      for (let i = 0; i < SAMPLES; i++) {
        samples.push(await server.rssBytes());
        await sleep(200, signal);
      }
      return median(samples);
    };
    const read = async (): Promise<MemoryReading> => {
      await sleep(p.settleMs, signal);
      const rssBytes = await medianRss();
      const usage = await server.memoryAfterGc();
      await sleep(500, signal); // pages the GC freed are returned to the OS meanwhile
      return {
        rssBytes,
        rssAfterGcBytes: await medianRss(),
        heapUsedBytes: usage.heapUsed,
        heapTotalBytes: usage.heapTotal,
        externalBytes: usage.external,
      };
    };

    // The rehearsal: the last members' streams, opened in chunks as the levels are, then
    // closed, before anything is read.
    const rehearsal = members.slice(members.length - p.rehearsalStreams);
    for (let i = 0; i < rehearsal.length; i += p.openChunk) {
      const opened = rehearsal
        .slice(i, i + p.openChunk)
        .map((m, k) =>
          openStream(connections.client(i + k), m.token, () => {}, { afterSeq: 0n, signal }),
        );
      await within(
        "the rehearsal streams to be live",
        30_000,
        Promise.all(opened.map((s) => s.firstEnvelope)),
        signal,
      );
      for (const s of opened) s.close();
      await Promise.all(opened.map((s) => s.ended));
    }
    await openUpTo(p.warmupStreams);
    // Setting up thousands of members leaves freed pages the process gives back to the OS
    // only over the next seconds: an early reading would count that return against the
    // streams (a 1,000-stream level came out negative, by 16-40 KB per stream). Read until
    // two readings in a row agree.
    let baseline = await read();
    for (let i = 0; i < 6; i++) {
      const again = await read();
      const settled = Math.abs(again.rssAfterGcBytes - baseline.rssAfterGcBytes) < 2 * 2 ** 20;
      baseline = again;
      if (settled) break;
    }
    const levels: MemoryLevel[] = [];
    for (const level of p.levels) {
      const started = performance.now();
      await openUpTo(p.warmupStreams + level);
      const openMs = round(performance.now() - started);
      const reading = await read();
      // A stream the server ended is not an idle subscription: the reading would be wrong.
      const failed = streams.filter((s) => !s.isOpen()).length;
      if (failed > 0) throw new Error(`${failed} streams ended while idle`);
      const per = (now: number, before: number) => Math.round((now - before) / level);
      levels.push({
        streams: level,
        ...reading,
        bytesPerStream: per(reading.rssAfterGcBytes, baseline.rssAfterGcBytes),
        bytesPerStreamNoGc: per(reading.rssBytes, baseline.rssBytes),
        heapBytesPerStream: per(reading.heapUsedBytes, baseline.heapUsedBytes),
        openMs,
      });
      const last = levels.at(-1);
      ctx.log(
        `  memory @${level} streams: RSS ${(reading.rssAfterGcBytes / 2 ** 20).toFixed(1)} MiB ` +
          `after GC, ${((last?.bytesPerStream ?? 0) / 1000).toFixed(1)} KB per stream ` +
          `(no GC: ${((last?.bytesPerStreamNoGc ?? 0) / 1000).toFixed(1)} KB, ` +
          `V8 heap: ${((last?.heapBytesPerStream ?? 0) / 1000).toFixed(1)} KB)`,
      );
    }
    return { connections: p.connections, warmupStreams: p.warmupStreams, baseline, levels };
  } finally {
    for (const s of streams) s.close();
    connections.close();
  }
}
