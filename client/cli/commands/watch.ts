import { styleText } from "node:util";
import { describeTeamEvent, type TeamEventKind } from "@team-protocols/client/describe-event.js";
import { type TeamEvent, TeamEventSchema } from "@team-protocols/contract/team/v1/feed_pb.js";
import type { Command } from "commander";
import {
  asJson,
  type ConnectionOptions,
  clientFor,
  connectionOptions,
  UsageError,
  wholeNumber,
} from "../context.js";

interface WatchFlags extends ConnectionOptions {
  since?: string;
  now: boolean;
  history: boolean;
  count?: number;
}

const colours: Record<TeamEventKind, Parameters<typeof styleText>[0]> = {
  message: "cyan",
  request: "yellow",
  member: "magenta",
  task: "green",
  unknown: "gray",
};

/** watch: a live tail of the whole team (WatchTeam), for the lead and observers. */
export function watchCommand(program: Command): void {
  connectionOptions(
    program
      .command("watch")
      .summary("tail the whole team live: every message, request change and member change")
      .description(
        "lead or observer: print the team's feed, one line per event (--json: one JSON object " +
          "per line, with the cursor to resume from), then follow it live until Ctrl-C or " +
          "--count; it reconnects by itself and resumes where it left off",
      )
      .option("--since <cursor>", "resume after this cursor (from an earlier --json line)")
      .option("--now", "skip the history: only what happens from now on", false)
      .option("--history", "print what the server keeps (after --since), then exit", false)
      .option("--count <n>", "stop after this many events", wholeNumber),
  ).action(async (o: WatchFlags) => {
    if (o.since !== undefined && o.now)
      throw new UsageError("--since and --now exclude each other");
    if (o.history && o.now) throw new UsageError("--history and --now exclude each other");
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
    // Colour only for a person at a terminal (and never with NO_COLOR set).
    const colour = !o.json && process.stdout.isTTY === true && !process.env.NO_COLOR;
    const write = (cursor: string | undefined, event: TeamEvent) => {
      if (o.json) {
        const line = { cursor, event: asJson(TeamEventSchema, event) };
        process.stdout.write(`${JSON.stringify(line)}\n`);
      } else {
        const { kind, line } = describeTeamEvent(event);
        process.stdout.write(`${colour ? styleText(colours[kind], line) : line}\n`);
      }
    };
    if (o.history) {
      // One stream the server ends once the kept feed is sent: nothing to resume.
      let seen = 0;
      for await (const res of clientFor(o).rpc.watchTeam(
        { cursor: o.since ?? "", historyOnly: true },
        { signal: stop.signal },
      )) {
        if (res.kind.case !== "event") continue;
        write(res.cursor, res.kind.value);
        if (o.count !== undefined && ++seen >= o.count) break;
      }
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      return;
    }
    const feed = clientFor(o).watch({
      ...(o.since !== undefined ? { cursor: o.since } : {}),
      fromNow: o.now,
      signal: stop.signal,
      onStatus(s) {
        if (s.state === "disconnected" && s.error) {
          process.stderr.write(`watch: ${s.error.message}; reconnecting in ${s.retryInMs} ms\n`);
        }
      },
    });
    let seen = 0;
    try {
      for await (const event of feed) {
        write(feed.cursor, event);
        seen++;
        if (o.count !== undefined && seen >= o.count) break;
      }
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    }
  });
}
