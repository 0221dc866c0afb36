import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { sleep } from "./wait.js";

/**
 * A Jepsen-style ledger for the inbox service: client loops that record every acknowledged
 * Send and every delivery while faults happen around them, and a checker that compares the
 * records with each other (and, in the test, with the database).
 *
 * The clients only do what the contract tells a client to do: a failed Send is retried with
 * the same message_id (on any replica) until it is acknowledged; a broken stream is resumed
 * with after_seq = the last seq handled, or, after a simulated client restart that lost that
 * number, with a bare Subscribe (the server's ack cursor).
 */

export type TeamClient = Client<typeof TeamService>;

/** mulberry32: a small seeded generator, so a run's choices can be replayed from its seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** The server endpoints clients may use; a restarted replica replaces its slot's URL. */
export class Endpoints {
  private readonly slots: { url: string; client: TeamClient }[] = [];
  constructor(private readonly random: () => number) {}
  set(slot: number, url: string): void {
    this.slots[slot] = {
      url,
      client: createClient(TeamService, createGrpcTransport({ baseUrl: url })),
    };
  }
  /** Any slot, at random: a client that lost its server just tries another one. */
  pick(): { slot: number; client: TeamClient } {
    const slot = Math.floor(this.random() * this.slots.length);
    return { slot, client: (this.slots[slot] as { client: TeamClient }).client };
  }
  url(slot: number): string {
    return (this.slots[slot] as { url: string }).url;
  }
}

export const auth = (token: string) => ({ authorization: `Bearer ${token}` });

/** Codes a retry cannot fix: seeing one in a fault test means the server got it wrong. */
const REFUSALS = new Set([
  Code.InvalidArgument,
  Code.NotFound,
  Code.AlreadyExists,
  Code.PermissionDenied,
  Code.Unauthenticated,
  Code.FailedPrecondition,
  Code.OutOfRange,
]);

export interface Tally {
  /** "Send Unavailable" -> count, etc. */
  errors: Map<string, number>;
  /** The same, by message: "Send Unavailable: connect ECONNREFUSED" -> count. */
  messages: Map<string, number>;
  /** Anything that breaks the contract, in words. The test expects none. */
  violations: string[];
}

export function newTally(): Tally {
  return { errors: new Map(), messages: new Map(), violations: [] };
}

function countError(tally: Tally, rpc: string, err: unknown): ConnectError {
  const ce = ConnectError.from(err);
  const key = `${rpc} ${Code[ce.code]}`;
  tally.errors.set(key, (tally.errors.get(key) ?? 0) + 1);
  const message = `${key}: ${ce.rawMessage.slice(0, 100)}`;
  tally.messages.set(message, (tally.messages.get(message) ?? 0) + 1);
  return ce;
}

// ---------------------------------------------------------------------------------------
// Senders

export interface SendRecord {
  sender: string;
  /** Position in its sender's sequence: message n+1 is sent after n was acknowledged. */
  n: number;
  /** "" for a plain send (no idempotency key: tried once, never retried). */
  messageId: string;
  to: string;
  /** Unique per send: how deliveries are matched to sends (plain sends have no id). */
  text: string;
  acked: boolean;
  attempts: number;
  /** Attempts the client gave up on after a few ms (the server may still commit them). */
  impatient: number;
  /** The acknowledgement said `replayed`: an earlier attempt had stored it. */
  replayed: boolean;
  deliveries: { to: string; seq: bigint }[];
}

export interface SenderOptions {
  name: string;
  token: string;
  others: string[];
  count: number;
  broadcastShare: number;
  /**
   * Share of sends without a message_id. They take the server's group-commit path; the
   * contract does not make their retry safe, so they are tried once.
   */
  plainShare: number;
  /** Share of attempts made with a deadline of a few ms (a client that gives up early). */
  impatientShare: number;
  /** Random pause between sends, up to this. */
  paceMs: number;
  endpoints: Endpoints;
  random: () => number;
  /** No new message is started after this (the test's time budget)... */
  deadline: number;
  /** ...and retrying a started one stops here. */
  retryDeadline: number;
  records: SendRecord[];
  tally: Tally;
  onAcked: () => void;
}

/**
 * Sends `count` texts one after another, each retried with its message_id until acknowledged
 * (or the retry deadline), so message n+1 is only sent once n is stored.
 */
export async function runSender(o: SenderOptions): Promise<void> {
  for (let n = 0; n < o.count && Date.now() < o.deadline; n++) {
    const to =
      o.random() < o.broadcastShare
        ? "*"
        : (o.others[Math.floor(o.random() * o.others.length)] ?? "*");
    const plain = o.random() < o.plainShare;
    const messageId = plain ? "" : `${o.name}-${n}`;
    const record: SendRecord = {
      sender: o.name,
      n,
      messageId,
      to,
      text: `ledger ${o.name}-${n}${plain ? " plain" : ""} to ${to}`,
      acked: false,
      attempts: 0,
      impatient: 0,
      replayed: false,
      deliveries: [],
    };
    o.records.push(record);
    let delay = 20;
    while (Date.now() < o.retryDeadline) {
      record.attempts++;
      const impatient = !plain && o.random() < o.impatientShare;
      if (impatient) record.impatient++;
      try {
        const res = await o.endpoints.pick().client.send(
          { to, message: { kind: { case: "text", value: record.text } }, messageId },
          {
            headers: auth(o.token),
            timeoutMs: impatient ? 2 + Math.floor(o.random() * 20) : 5_000,
          },
        );
        record.acked = true;
        record.replayed = res.replayed;
        record.deliveries = res.deliveries.map((d) => ({ to: d.to, seq: d.seq }));
        o.onAcked();
        break;
      } catch (err) {
        const ce = countError(o.tally, impatient ? "Send(impatient)" : "Send", err);
        if (REFUSALS.has(ce.code)) {
          o.tally.violations.push(`Send ${record.text} refused: ${Code[ce.code]} ${ce.rawMessage}`);
          break;
        }
        if (plain) break; // outcome unknown: stored once or not at all
        await sleep(delay * (0.5 + o.random()));
        delay = Math.min(delay * 2, 500);
      }
    }
    if (o.paceMs > 0) await sleep(o.random() * o.paceMs);
  }
}

/**
 * After the traffic: one end marker into every member's inbox (a broadcast from `lead`, and
 * one from `other` to the lead), each retried with its message_id until acknowledged and
 * recorded as a send like the others (`n` after every sender's last). A stream delivers in
 * seq order from a cursor that only moves forward, so a subscriber that has handled its
 * marker has received everything stored before it: a late duplicate or a stray envelope
 * would have come first. Returns each inbox's marker seq.
 */
export async function sendEndMarkers(o: {
  lead: string;
  other: string;
  tokenOf: (name: string) => string;
  endpoints: Endpoints;
  n: number;
  records: SendRecord[];
  tally: Tally;
}): Promise<Map<string, bigint>> {
  const seqs = new Map<string, bigint>();
  for (const [sender, to] of [
    [o.lead, "*"],
    [o.other, o.lead],
  ] as const) {
    const record: SendRecord = {
      sender,
      n: o.n,
      messageId: `${sender}-end`,
      to,
      text: `ledger end marker from ${sender} to ${to}`,
      acked: false,
      attempts: 0,
      impatient: 0,
      replayed: false,
      deliveries: [],
    };
    o.records.push(record);
    for (let delay = 20; !record.acked; delay = Math.min(delay * 2, 500)) {
      record.attempts++;
      try {
        const res = await o.endpoints.pick().client.send(
          {
            to,
            message: { kind: { case: "text", value: record.text } },
            messageId: record.messageId,
          },
          { headers: auth(o.tokenOf(sender)), timeoutMs: 5_000 },
        );
        record.acked = true;
        record.replayed = res.replayed;
        record.deliveries = res.deliveries.map((d) => ({ to: d.to, seq: d.seq }));
      } catch (err) {
        const ce = countError(o.tally, "Send(end marker)", err);
        if (REFUSALS.has(ce.code) || record.attempts >= 20) throw ce;
        await sleep(delay);
      }
    }
    for (const d of record.deliveries) seqs.set(d.to, d.seq);
  }
  return seqs;
}

// ---------------------------------------------------------------------------------------
// Subscribers

export interface DeliveryRecord {
  inbox: string;
  seq: bigint;
  from: string;
  messageId: string;
  text: string;
  /** Which of this subscriber's streams delivered it (1, 2, ...). */
  stream: number;
}

export interface StreamRecord {
  no: number;
  /** undefined: a bare Subscribe (resume after the ack cursor). */
  afterSeq: bigint | undefined;
  /** The highest ack the server had confirmed before this stream was opened. */
  ackedAtOpen: bigint;
  how: "open" | "dropped" | "error" | "ended" | "stopped";
  error?: string;
  /** Which endpoint slot and URL it went to. */
  slot: number;
  url: string;
  openedAt: number;
  envelopes: number;
  heartbeats: number;
  /** The last heartbeat's last_seq (the server-side cursor of the stream). */
  heartbeatSeq?: bigint;
  lastEventAt?: number;
}

export class Subscriber {
  /** Highest seq handled: streams deliver in order without gaps, so all below it too. */
  lastHandled = 0n;
  /** The ack cursor as the server last confirmed it. */
  confirmedAck = 0n;
  readonly deliveries: DeliveryRecord[] = [];
  readonly streams: StreamRecord[] = [];
  drops = 0;
  private current: AbortController | undefined;
  private stopped = false;
  private acking = false;
  private sinceAck = 0;
  private done: Promise<void> | undefined;

  constructor(
    readonly name: string,
    private readonly token: string,
    private readonly endpoints: Endpoints,
    private readonly random: () => number,
    private readonly tally: Tally,
    /** Share of reconnects made as a restarted client would: a bare Subscribe. */
    private readonly forgetShare: number,
  ) {}

  start(): void {
    this.done = this.loop();
  }

  /** Cuts the current stream from the client side, as a crashed or impatient client would. */
  drop(): boolean {
    if (!this.current || this.current.signal.aborted) return false;
    this.drops++;
    this.current.abort();
    return true;
  }

  /** The last few streams, for a failure message. */
  describe(now = Date.now()): string {
    return this.streams
      .slice(-3)
      .map(
        (x) =>
          `#${x.no} slot ${x.slot} ${x.url} after ${x.afterSeq ?? "ack"} ${x.how}` +
          `${x.error ? ` (${x.error})` : ""}, opened ${now - x.openedAt} ms ago, ` +
          `${x.envelopes} envelopes, ${x.heartbeats} heartbeats (last_seq ${x.heartbeatSeq}), ` +
          `last event ${x.lastEventAt ? `${now - x.lastEventAt} ms ago` : "never"}`,
      )
      .join(" | ");
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.current?.abort();
    await this.done;
  }

  private async loop(): Promise<void> {
    let delay = 20;
    while (!this.stopped) {
      const bare = this.streams.length > 0 && this.random() < this.forgetShare;
      const { slot, client } = this.endpoints.pick();
      const record: StreamRecord = {
        no: this.streams.length + 1,
        afterSeq: bare ? undefined : this.lastHandled,
        ackedAtOpen: this.confirmedAck,
        how: "open",
        slot,
        url: this.endpoints.url(slot),
        openedAt: Date.now(),
        envelopes: 0,
        heartbeats: 0,
      };
      this.streams.push(record);
      const abort = new AbortController();
      this.current = abort;
      let expected = record.afterSeq === undefined ? undefined : record.afterSeq + 1n;
      try {
        const stream = client.subscribe(
          record.afterSeq === undefined ? {} : { afterSeq: record.afterSeq },
          {
            headers: auth(this.token),
            signal: abort.signal,
          },
        );
        for await (const res of stream) {
          record.lastEventAt = Date.now();
          if (res.event.case === "heartbeat") {
            record.heartbeats++;
            record.heartbeatSeq = res.event.value.lastSeq;
          }
          if (res.event.case !== "envelope") continue;
          record.envelopes++;
          const e = res.event.value;
          if (expected === undefined) {
            // The first envelope of a bare Subscribe: right after the stored ack cursor, which
            // is at least what was confirmed and at most what this client handled.
            if (e.seq <= record.ackedAtOpen) {
              this.tally.violations.push(
                `${this.name}: bare Subscribe replayed seq ${e.seq}, acked (confirmed) ${record.ackedAtOpen}`,
              );
            }
            if (e.seq > this.lastHandled + 1n) {
              this.tally.violations.push(
                `${this.name}: bare Subscribe started at seq ${e.seq}, after ${this.lastHandled} handled`,
              );
            }
          } else if (e.seq !== expected) {
            this.tally.violations.push(
              `${this.name}: stream ${record.no} delivered seq ${e.seq}, expected ${expected}`,
            );
          }
          expected = e.seq + 1n;
          this.deliveries.push({
            inbox: this.name,
            seq: e.seq,
            from: e.from,
            messageId: e.messageId,
            text:
              e.message?.kind.case === "text" ? e.message.kind.value : `<${e.message?.kind.case}>`,
            stream: record.no,
          });
          if (e.seq > this.lastHandled) this.lastHandled = e.seq;
          delay = 20;
          if (++this.sinceAck >= 5 + Math.floor(this.random() * 30)) this.ack();
        }
        record.how = this.stopped ? "stopped" : "ended";
      } catch (err) {
        if (abort.signal.aborted) {
          record.how = this.stopped ? "stopped" : "dropped";
        } else {
          const ce = countError(this.tally, "Subscribe", err);
          record.how = "error";
          record.error = `${Code[ce.code]} ${ce.rawMessage}`;
          if (REFUSALS.has(ce.code)) this.tally.violations.push(`${this.name}: ${record.error}`);
        }
      }
      if (!this.stopped) {
        await sleep(delay * (0.5 + this.random()));
        delay = Math.min(delay * 2, 500);
      }
    }
  }

  /** Acks what was handled, in the background (one Ack at a time). */
  private ack(): void {
    if (this.acking) return;
    this.acking = true;
    this.sinceAck = 0;
    const seq = this.lastHandled;
    void this.endpoints
      .pick()
      .client.ack({ seq }, { headers: auth(this.token), timeoutMs: 3_000 })
      .then(
        (res) => {
          if (res.ackedSeq > this.confirmedAck) this.confirmedAck = res.ackedSeq;
        },
        (err) => {
          const ce = countError(this.tally, "Ack", err);
          if (REFUSALS.has(ce.code))
            this.tally.violations.push(`${this.name}: Ack ${ce.rawMessage}`);
        },
      )
      .finally(() => {
        this.acking = false;
      });
  }
}

// ---------------------------------------------------------------------------------------
// The checker

export interface LedgerFacts {
  records: SendRecord[];
  subscribers: Subscriber[];
  /** Every member's inbox head (last_seq), from the database. */
  heads: Map<string, bigint>;
  members: string[];
}

export interface LedgerReport {
  sendsAttempted: number;
  sendsAcknowledged: number;
  withIdAttempted: number;
  withIdAcknowledged: number;
  plainAttempted: number;
  plainAcknowledged: number;
  /** Plain sends whose call failed but which had been stored (once, in every inbox). */
  plainUnacknowledgedStored: number;
  broadcastsAcknowledged: number;
  sendAttempts: number;
  impatientAttempts: number;
  acknowledgedAsReplayed: number;
  /** Distinct (inbox, seq) pairs: what the inboxes hold. */
  inboxMessages: number;
  /** Acknowledged (recipient, seq) pairs, each checked to have been delivered. */
  acknowledgedDeliveries: number;
  /** Envelopes received, duplicates included. */
  deliveriesReceived: number;
  duplicates: number;
  lost: number;
  gaps: number;
  violations: string[];
  /** inbox -> seq -> the delivery (first copy). */
  delivered: Map<string, Map<bigint, DeliveryRecord>>;
}

/** Compares what was acknowledged with what was delivered; every broken rule is a violation. */
export function checkLedger(facts: LedgerFacts): LedgerReport {
  const violations: string[] = [];
  const flag = (v: string) => {
    if (violations.length < 50) violations.push(v);
  };
  // Texts are unique per send, and plain sends have no id: match deliveries by sender + text.
  const keyOf = (from: string, text: string) => `${from}|${text}`;
  const sentByKey = new Map(facts.records.map((r) => [keyOf(r.sender, r.text), r]));

  // What each inbox delivered, once per seq; duplicates kept apart.
  const delivered = new Map<string, Map<bigint, DeliveryRecord>>();
  let duplicates = 0;
  let received = 0;
  for (const s of facts.subscribers) {
    const bySeq = new Map<bigint, DeliveryRecord>();
    delivered.set(s.name, bySeq);
    for (const d of s.deliveries) {
      received++;
      const first = bySeq.get(d.seq);
      if (!first) {
        bySeq.set(d.seq, d);
        continue;
      }
      duplicates++;
      if (first.messageId !== d.messageId || first.text !== d.text || first.from !== d.from) {
        flag(`${s.name} seq ${d.seq}: delivered as "${first.text}" and as "${d.text}"`);
      }
      // A duplicate may only come from a later stream that resumed from the ack cursor, and
      // only for a seq that was not yet acknowledged when that stream opened.
      const stream = s.streams[d.stream - 1];
      if (!stream || d.stream <= first.stream || stream.afterSeq !== undefined) {
        flag(
          `${s.name} seq ${d.seq}: duplicate on stream ${d.stream} (after_seq ${stream?.afterSeq})`,
        );
      } else if (d.seq <= stream.ackedAtOpen) {
        flag(`${s.name} seq ${d.seq}: redelivered although acked (${stream.ackedAtOpen})`);
      }
    }
  }

  // Each inbox: 1..head, nothing missing, nothing beyond; each row from a real send, once.
  let gaps = 0;
  let inboxMessages = 0;
  const storedIn = new Map<SendRecord, string[]>();
  for (const name of facts.members) {
    const head = facts.heads.get(name) ?? 0n;
    const bySeq = delivered.get(name) ?? new Map<bigint, DeliveryRecord>();
    inboxMessages += bySeq.size;
    for (let seq = 1n; seq <= head; seq++) {
      if (!bySeq.has(seq)) {
        gaps++;
        flag(`${name}: seq ${seq} of ${head} never delivered`);
      }
    }
    const seen = new Map<string, bigint>();
    for (const [seq, d] of bySeq) {
      if (seq < 1n || seq > head) flag(`${name}: delivered seq ${seq} outside 1..${head}`);
      const key = keyOf(d.from, d.text);
      const sent = sentByKey.get(key);
      if (!sent) flag(`${name} seq ${seq}: "${d.text}" from ${d.from} was never sent`);
      else {
        if (sent.messageId !== d.messageId) {
          flag(`${name} seq ${seq}: message_id "${d.messageId}", sent as "${sent.messageId}"`);
        }
        if (sent.to !== "*" && sent.to !== name) flag(`${name} seq ${seq}: meant for ${sent.to}`);
        storedIn.set(sent, [...(storedIn.get(sent) ?? []), name]);
      }
      const other = seen.get(key);
      if (other !== undefined) flag(`${name}: "${d.text}" stored twice (seq ${other} and ${seq})`);
      seen.set(key, seq);
    }
  }

  // Every send, acknowledged or not, is stored in all of its recipients' inboxes or in none.
  const recipientsOf = (r: SendRecord) =>
    r.to === "*" ? facts.members.filter((m) => m !== r.sender).sort() : [r.to];
  for (const [r, inboxes] of storedIn) {
    if (inboxes.sort().join() !== recipientsOf(r).join()) {
      flag(`"${r.text}" stored in [${inboxes}] only, expected [${recipientsOf(r)}]`);
    }
  }

  // Every acknowledged send: delivered where the acknowledgement said, to the right members.
  let lost = 0;
  let acknowledgedDeliveries = 0;
  const acked = facts.records.filter((r) => r.acked);
  for (const r of acked) {
    const got = r.deliveries.map((d) => d.to).sort();
    if (got.join() !== recipientsOf(r).join()) {
      flag(`"${r.text}": acknowledged deliveries to [${got}], expected [${recipientsOf(r)}]`);
    }
    for (const d of r.deliveries) {
      acknowledgedDeliveries++;
      const seen = delivered.get(d.to)?.get(d.seq);
      if (seen?.from !== r.sender || seen.text !== r.text || seen.messageId !== r.messageId) {
        lost++;
        flag(
          `LOST "${r.text}": acknowledged as ${d.to}#${d.seq}, ` +
            (seen ? `which holds "${seen.text}" from ${seen.from}` : "never delivered"),
        );
      }
    }
  }

  // Per-inbox order: a sender's message n+1 was sent after n was acknowledged, so in any
  // inbox both reached, n+1 must have the larger seq.
  const lastSeqOf = new Map<string, { n: number; seq: bigint }>();
  for (const r of [...acked].sort((a, b) => a.n - b.n)) {
    for (const d of r.deliveries) {
      const key = `${r.sender}->${d.to}`;
      const prev = lastSeqOf.get(key);
      if (prev && prev.seq >= d.seq) {
        flag(`order ${key}: message ${r.n} got seq ${d.seq}, message ${prev.n} got ${prev.seq}`);
      }
      lastSeqOf.set(key, { n: r.n, seq: d.seq });
    }
  }

  const plain = facts.records.filter((r) => r.messageId === "");
  return {
    sendsAttempted: facts.records.length,
    sendsAcknowledged: acked.length,
    withIdAttempted: facts.records.length - plain.length,
    withIdAcknowledged: acked.length - plain.filter((r) => r.acked).length,
    plainAttempted: plain.length,
    plainAcknowledged: plain.filter((r) => r.acked).length,
    plainUnacknowledgedStored: plain.filter((r) => !r.acked && storedIn.has(r)).length,
    broadcastsAcknowledged: acked.filter((r) => r.to === "*").length,
    sendAttempts: facts.records.reduce((n, r) => n + r.attempts, 0),
    impatientAttempts: facts.records.reduce((n, r) => n + r.impatient, 0),
    acknowledgedAsReplayed: acked.filter((r) => r.replayed).length,
    inboxMessages,
    acknowledgedDeliveries,
    deliveriesReceived: received,
    duplicates,
    lost,
    gaps,
    violations,
    delivered,
  };
}
