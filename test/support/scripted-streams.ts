import {
  Code,
  ConnectError,
  createClient,
  createRouterTransport,
  type HandlerContext,
} from "@connectrpc/connect";
import {
  type SubscribeRequest,
  type SubscribeResponse,
  TeamService,
  type WatchTeamRequest,
  type WatchTeamResponse,
} from "../../gen/team/v1/team_service_pb.js";

/**
 * Pieces of the scripted in-memory servers that the client's stream tests share
 * (client-inbox, client-team-watch): each test scripts how every stream the client opens
 * misbehaves.
 */

/** Waits until the call is canceled: a stream that stays open but sends nothing. */
export const silence = (ctx: HandlerContext) =>
  new Promise<never>((_, reject) => {
    ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true });
  });

/** Reconnect delays of a few milliseconds: the scripts break streams on purpose. */
export const FAST_BACKOFF = { initialMs: 1, maxMs: 10 };

/** The first `count` values the iteration hands out, by `key`; then it leaves the loop. */
export async function take<T, K>(
  source: AsyncIterable<T>,
  count: number,
  key: (value: T) => K,
): Promise<K[]> {
  const taken: K[] = [];
  for await (const value of source) {
    taken.push(key(value));
    if (taken.length === count) break;
  }
  return taken;
}

/** How one call of a scripted stream misbehaves. */
export type Script<Req, Res> = (req: Req, ctx: HandlerContext) => AsyncIterable<Res>;

interface StreamScripts {
  subscribe: Script<SubscribeRequest, SubscribeResponse>;
  watchTeam: Script<WatchTeamRequest, WatchTeamResponse>;
}

/**
 * An in-memory TeamService whose `method` stream runs the next script on each call (no
 * script left: Unavailable), recording where each call asked to resume; acks are recorded.
 */
export function scriptedServer<M extends keyof StreamScripts>(
  method: M,
  scripts: StreamScripts[M][],
) {
  const subscribes: (bigint | undefined)[] = [];
  const watches: { cursor: string; fromNow: boolean }[] = [];
  const acks: bigint[] = [];
  let calls = 0;
  const next = <S>(called: keyof StreamScripts): S => {
    if (called !== method) throw new ConnectError(`${called} is not scripted`, Code.Unimplemented);
    const script = scripts[calls++];
    if (!script) throw new ConnectError("no more scripts", Code.Unavailable);
    return script as S;
  };
  const transport = createRouterTransport(({ service }) => {
    service(TeamService, {
      async *subscribe(req, ctx) {
        subscribes.push(req.afterSeq);
        yield* next<StreamScripts["subscribe"]>("subscribe")(req, ctx);
      },
      async *watchTeam(req, ctx) {
        watches.push({ cursor: req.cursor, fromNow: req.fromNow });
        yield* next<StreamScripts["watchTeam"]>("watchTeam")(req, ctx);
      },
      async ack(req) {
        acks.push(req.seq);
        return { ackedSeq: req.seq };
      },
    });
  });
  return { rpc: createClient(TeamService, transport), subscribes, watches, acks };
}
