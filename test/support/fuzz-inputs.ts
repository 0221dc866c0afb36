import { gzipSync } from "node:zlib";
import { create, type DescMethod, type JsonValue, toBinary, toJson } from "@bufbuild/protobuf";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { envelope } from "./raw-rpc.js";

/**
 * Hostile requests for TeamService, generated from a seed: every case is a pure function of
 * (seed, case index, world), so a failing case is replayed with FUZZ_SEED and FUZZ_CASE.
 */

// ---------------------------------------------------------------------------------------
// Seeded PRNG (sfc32), one independent stream per case.

export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number, stream = 0) {
    this.a = 0x9e3779b9;
    this.b = seed >>> 0;
    this.c = (stream * 0x85ebca6b) >>> 0;
    this.d = (seed ^ 0xdeadbeef) >>> 0;
    for (let i = 0; i < 16; i++) this.u32();
  }

  u32(): number {
    this.a >>>= 0;
    this.b >>>= 0;
    this.c >>>= 0;
    this.d >>>= 0;
    let t = (this.a + this.b) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.d = (this.d + 1) | 0;
    t = (t + this.d) | 0;
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** [0, n) */
  int(n: number): number {
    return Math.floor((this.u32() / 2 ** 32) * n);
  }

  chance(p: number): boolean {
    return this.u32() / 2 ** 32 < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }

  /** Picks by weight: [[weight, value], ...]. */
  weighted<T>(items: readonly (readonly [number, T])[]): T {
    const total = items.reduce((s, [w]) => s + w, 0);
    let x = this.int(total);
    for (const [w, v] of items) {
      if (x < w) return v;
      x -= w;
    }
    return (items.at(-1) as readonly [number, T])[1];
  }

  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.u32() & 0xff;
    return out;
  }
}

// ---------------------------------------------------------------------------------------
// The world the fuzzer aims at: a real team's names and request ids.

export type Credential =
  | "lead"
  | "worker"
  | "revoked"
  | "other-team"
  | "unknown"
  | "malformed"
  | "missing"
  | "basic";

export interface FuzzWorld {
  team: string;
  /** Members of the target team (lead first). */
  members: string[];
  /** A member of the other team only. */
  otherTeamMember: string;
  /** Real request ids of the target team. */
  requestIds: string[];
  /** Task ids the target team has recorded (claimed, pending a claim, ...). */
  taskIds: string[];
  tokens: Record<"lead" | "worker" | "revoked" | "other-team", string>;
}

export const M = TeamService.method;

// ---------------------------------------------------------------------------------------
// Field values: plausible, borderline and hostile.

const URL_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const randomString = (r: Rng, n: number, alphabet = URL_CHARS) => {
  let s = "";
  for (let i = 0; i < n; i++) s += alphabet[r.int(alphabet.length)];
  return s;
};

const hostileStrings = (r: Rng): string[] => [
  "",
  " ",
  "\t\n",
  "\u0000",
  `a\u0000b`,
  "UPPER",
  "-dash-first",
  "a b",
  "ünïcödé",
  "🙂🙂",
  "\ud800",
  "\udfff\ud800",
  "../../etc/passwd",
  "'; DROP TABLE members; --",
  "%00%ff",
  "a".repeat(64),
  "a".repeat(65),
  "x".repeat(1000 + r.int(5000)),
  randomString(r, 10 + r.int(50), `${URL_CHARS}!@#$%^&*()[]{}<>"'\\/`),
];

function name(r: Rng, w: FuzzWorld, avoid: string[] = []): string {
  const n = r.weighted<() => string>([
    [5, () => r.pick(w.members)],
    [1, () => w.otherTeamMember],
    [3, () => `fz-${randomString(r, 6, "abcdefghijklmnopqrstuvwxyz0123456789")}`],
    [1, () => "*"],
    [4, () => r.pick(hostileStrings(r))],
  ])();
  return avoid.includes(n) ? `fz-${randomString(r, 6, "abcdefghijklmnopqrstuvwxyz")}` : n;
}

function longText(r: Rng): string {
  return r.pick([
    "x".repeat(64 * 1024),
    "x".repeat(64 * 1024 + 1),
    "é".repeat(32 * 1024 + 1),
    "y".repeat(256 * 1024 + 1),
    "z".repeat(300_000 + r.int(500_000)),
  ]);
}

function text(r: Rng): string {
  return r.weighted<() => string>([
    [6, () => `fuzz ${randomString(r, r.int(40))}`],
    [3, () => r.pick(hostileStrings(r))],
    [1, () => longText(r)],
  ])();
}

function taskId(r: Rng, w: FuzzWorld): string {
  return r.weighted<() => string>([
    [5, () => r.pick(w.taskIds)],
    [2, () => `fz-task-${r.int(4)}`],
    [1, () => "t".repeat(r.pick([128, 129]))],
    [2, () => r.pick(hostileStrings(r))],
  ])();
}

/** A task's dependency list: usually a few of the world's ids, sometimes many or hostile. */
function taskIds(r: Rng, w: FuzzWorld): string[] {
  return Array.from({ length: r.pick([0, 1, 2, 3, 101]) }, () => taskId(r, w));
}

/** A subject or an active form: a plausible line, or hostile text. */
function line(r: Rng): string {
  return r.weighted<() => string>([
    [6, () => `fuzz ${randomString(r, r.int(40))}`],
    [1, () => "s".repeat(r.pick([200, 201]))],
    [3, () => r.pick(hostileStrings(r))],
  ])();
}

function requestId(r: Rng, w: FuzzWorld): string {
  return r.weighted<() => string>([
    [5, () => r.pick(w.requestIds)],
    [2, () => `req_${randomString(r, 22)}`],
    [
      3,
      () =>
        r.pick([
          "",
          "req_",
          "req_short",
          `REQ_${randomString(r, 22)}`,
          `req_${randomString(r, 23)}`,
        ]),
    ],
    [1, () => r.pick(hostileStrings(r))],
  ])();
}

const U64_MAX = 2n ** 64n - 1n;
const I64_MAX = 2n ** 63n - 1n;

function seq(r: Rng): bigint {
  return r.weighted<() => bigint>([
    [6, () => BigInt(r.int(12))],
    [1, () => BigInt(r.int(2 ** 31))],
    [3, () => r.pick([2n ** 31n - 1n, 2n ** 32n, 2n ** 53n + 1n, I64_MAX, I64_MAX + 1n, U64_MAX])],
  ])();
}

/** Enum numbers: known, zero, and unknown (open enums keep them). */
const enumNumber = (r: Rng, known: number) =>
  r.weighted<() => number>([
    [6, () => r.int(known + 1)],
    [2, () => r.pick([known + 1, 99, 2 ** 31 - 1, -1, -(2 ** 31)])],
  ])();

function duration(r: Rng): { seconds: bigint; nanos: number } {
  return {
    seconds: r.pick([
      -10n,
      0n,
      1n,
      2n,
      60n,
      3600n,
      7n * 86400n,
      7n * 86400n + 1n,
      315_576_000_000n,
      -315_576_000_001n,
      I64_MAX,
    ]),
    nanos: r.pick([0, 1, 500_000_000, 999_999_999, -999_999_999, 2_000_000_000]),
  };
}

function messageId(r: Rng): string {
  return r.weighted<() => string>([
    [4, () => ""],
    [3, () => `fz-mid-${r.int(6)}`],
    [1, () => "m".repeat(128)],
    [1, () => "m".repeat(129)],
    [1, () => "é".repeat(128)],
    [1, () => r.pick(hostileStrings(r))],
  ])();
}

/** A Message (the oneof), in protobuf-es init form. */
function messageInit(r: Rng, w: FuzzWorld): object {
  const note = () =>
    r.weighted([
      [4, () => "because"],
      [1, () => text(r)],
    ] as const)();
  const kind = r.weighted<() => object>([
    [6, () => ({ case: "text", value: text(r) })],
    [2, () => ({ case: "shutdownRequest", value: { reason: note() } })],
    [
      2,
      () => ({
        case: "shutdownResponse",
        value: { requestId: requestId(r, w), approve: r.chance(0.5), reason: note() },
      }),
    ],
    [2, () => ({ case: "planApprovalRequest", value: { plan: text(r) } })],
    [
      2,
      () => ({
        case: "planApprovalResponse",
        value: {
          requestId: requestId(r, w),
          approve: r.chance(0.5),
          feedback: note(),
          permissionMode: enumNumber(r, 4),
        },
      }),
    ],
    [
      2,
      () => ({
        case: "taskNotification",
        value: {
          taskId: r.pick(["t1", "", "t".repeat(300)]),
          status: enumNumber(r, 3),
          description: note(),
          summary: r.pick(["", note()]),
          result: r.pick(["", text(r)]),
          error: r.pick(["", note()]),
          usage: { totalTokens: seq(r), toolUses: seq(r), durationMs: seq(r) },
        },
      }),
    ],
    [2, () => ({ case: "taskClaimRequest", value: { taskId: taskId(r, w), note: note() } })],
    [
      2,
      () => ({
        case: "taskClaimResponse",
        value: { requestId: requestId(r, w), approve: r.chance(0.5), reason: note() },
      }),
    ],
    [2, () => ({ case: "taskAssign", value: { taskId: taskId(r, w), note: note() } })],
    [2, () => ({ case: "taskHandoffRequest", value: { taskId: taskId(r, w), note: note() } })],
    [
      2,
      () => ({
        case: "taskHandoffResponse",
        value: { requestId: requestId(r, w), accept: r.chance(0.5), reason: note() },
      }),
    ],
    [
      2,
      () => ({
        case: "resultSignoffRequest",
        value: { taskId: taskId(r, w), result: text(r), summary: r.pick(["", note()]) },
      }),
    ],
    [
      2,
      () => ({
        case: "resultSignoffResponse",
        value: { requestId: requestId(r, w), approve: r.chance(0.5), feedback: note() },
      }),
    ],
    [
      1,
      () => ({
        case: "requestUpdate",
        value: { requestId: requestId(r, w), kind: enumNumber(r, 6), status: enumNumber(r, 5) },
      }),
    ],
    [1, () => ({ case: undefined })],
  ])();
  return { kind };
}

/**
 * A request for `method` in protobuf-es init form: each field present or not, plausible or
 * hostile. The lead's shutdown requests never go to the worker (whose token the fuzzer uses,
 * so it stays active) and RemoveMember never names it.
 */
export function requestInit(
  r: Rng,
  method: DescMethod,
  w: FuzzWorld,
  credential: Credential,
): Record<string, unknown> {
  switch (method) {
    case M.createTeam:
      return {
        team: r.weighted<() => string>([
          [4, () => `fz-team-${randomString(r, 8, "abcdefghijklmnopqrstuvwxyz")}`],
          [2, () => w.team],
          [3, () => r.pick(hostileStrings(r))],
        ])(),
        ...(r.chance(0.4) ? { leadName: name(r, w) } : {}),
        leadPermissionMode: enumNumber(r, 4),
      };
    case M.addMember:
      return { name: name(r, w), ...(r.chance(0.3) ? { role: enumNumber(r, 3) } : {}) };
    case M.removeMember:
      return { name: name(r, w, ["worker"]) };
    case M.listMembers:
      return {};
    case M.send: {
      const message = messageInit(r, w) as { kind: { case?: string } };
      let to = name(r, w);
      if (credential === "lead" && message.kind.case === "shutdownRequest" && to === "worker") {
        to = "helper";
      }
      return {
        to,
        message: r.chance(0.95) ? message : undefined,
        ...(r.chance(0.4) ? { messageId: messageId(r) } : {}),
        ...(r.chance(0.25) ? { ttl: duration(r) } : {}),
        ...(r.chance(0.2) ? { replyTo: historyId(r) } : {}),
      };
    }
    case M.subscribe:
      return r.chance(0.7) ? { afterSeq: seq(r) } : {};
    case M.watchTeam:
      return {
        // Empty (the whole kept feed), forged or hostile text; cursors are opaque base64url.
        cursor: r.weighted<() => string>([
          [3, () => ""],
          [
            2,
            () =>
              randomString(
                r,
                r.int(40),
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
              ),
          ],
          [3, () => r.pick(hostileStrings(r))],
        ])(),
        fromNow: r.chance(0.3),
      };
    case M.readInbox:
      return {
        ...(r.chance(0.6) ? { afterSeq: seq(r) } : {}),
        limit: r.pick([0, 1, 5, 1000, 1001, 2 ** 32 - 1]),
        ack: r.chance(0.4),
      };
    case M.ack:
      return { seq: seq(r) };
    case M.getRequest:
    case M.cancelRequest:
      return { requestId: requestId(r, w) };
    case M.awaitRequest:
      return {
        requestId: requestId(r, w),
        ...(r.chance(0.6)
          ? { timeout: r.chance(0.7) ? { seconds: 0n, nanos: r.int(300) * 1e6 } : duration(r) }
          : {}),
      };
    case M.listRequests:
      return {
        status: enumNumber(r, 5),
        kind: enumNumber(r, 6),
        party: r.chance(0.5) ? "" : name(r, w),
        pageSize: pageSize(r),
        pageToken: pageToken(r),
      };
    case M.getTask:
      return { taskId: taskId(r, w) };
    case M.createTask:
      return {
        taskId: r.chance(0.5) ? "" : taskId(r, w),
        subject: line(r),
        ...(r.chance(0.4) ? { description: text(r) } : {}),
        ...(r.chance(0.3) ? { activeForm: line(r) } : {}),
        blockedBy: taskIds(r, w),
      };
    case M.updateTask:
      return {
        taskId: taskId(r, w),
        ...(r.chance(0.3) ? { subject: line(r) } : {}),
        ...(r.chance(0.2) ? { description: text(r) } : {}),
        ...(r.chance(0.2) ? { activeForm: line(r) } : {}),
        addBlockedBy: r.chance(0.3) ? taskIds(r, w) : [],
        removeBlockedBy: r.chance(0.2) ? taskIds(r, w) : [],
        addBlocks: r.chance(0.2) ? taskIds(r, w) : [],
        removeBlocks: r.chance(0.1) ? taskIds(r, w) : [],
        status: enumNumber(r, 5),
      };
    case M.deleteTask:
      return { taskId: taskId(r, w) };
    case M.listTasks:
      return {
        owner: r.chance(0.5) ? "" : name(r, w),
        state: enumNumber(r, 3),
        status: enumNumber(r, 5),
        ready: r.chance(0.3),
        blocked: r.chance(0.3),
        pageSize: pageSize(r),
        pageToken: pageToken(r),
      };
    case M.listAttempts:
      return {
        member: r.chance(0.5) ? "" : name(r, w),
        outcome: enumNumber(r, 2),
        requestId: r.chance(0.5) ? "" : requestId(r, w),
        pageSize: pageSize(r),
        pageToken: pageToken(r),
      };
    case M.rotateToken:
      return { member: r.pick([w.otherTeamMember, "zz-nobody", "Not A Name", "x".repeat(5000)]) };
    case M.deleteTeam:
      return { team: r.pick(["", "zz-nobody", "Not A Name", "x".repeat(5000), "' OR 1=1 --"]) };
    case M.acquireLease:
      return {
        resource: leaseResource(r),
        mode: enumNumber(r, 2),
        ttlSeconds: r.pick([0, 1, 60, 14_401, 2 ** 32 - 1]),
        reason: r.chance(0.5) ? "" : line(r),
      };
    case M.renewLease:
      return { leaseId: leaseId(r), ttlSeconds: r.pick([0, 60, 2 ** 32 - 1]) };
    case M.releaseLease:
      return { leaseId: leaseId(r), reason: r.chance(0.5) ? "" : line(r) };
    case M.listLeases:
      return {
        holder: r.chance(0.5) ? "" : name(r, w),
        resource: r.chance(0.5) ? "" : leaseResource(r),
      };
    case M.getThread:
      return { threadId: historyId(r), pageSize: pageSize(r), pageToken: pageToken(r) };
    case M.listThreads:
      return { pageSize: pageSize(r), pageToken: pageToken(r) };
    case M.searchMessages:
      return {
        query: searchQuery(r),
        from: r.chance(0.6) ? "" : name(r, w),
        to: r.chance(0.6) ? "" : name(r, w),
        kind: r.pick(["", "text", "shutdown_request", "nope", ...hostileStrings(r)]),
        ...(r.chance(0.2) ? { since: { seconds: BigInt(r.int(2_000_000_000)) } } : {}),
        ...(r.chance(0.2) ? { until: { seconds: BigInt(r.int(2_000_000_000)) } } : {}),
        pageSize: pageSize(r),
        pageToken: pageToken(r),
      };
    case M.exportTeam:
      return {};
    case M.importTeam:
      return {
        // Nothing, noise, hostile text, or a bundle's shape with garbage in it. (ImportTeam
        // is a client stream: the framing below sends this as one message, two, or none.)
        chunk: r.weighted<() => Uint8Array>([
          [1, () => new Uint8Array()],
          [2, () => Buffer.from(randomString(r, r.int(200), '{}"\n:,abc0123'))],
          [2, () => Buffer.from(`${r.pick(hostileStrings(r))}\n`)],
          [
            2,
            () =>
              Buffer.from(
                `{"kind":"team","name":${JSON.stringify(r.pick(hostileStrings(r)))}}\n` +
                  `{"kind":"manifest","format":"team-protocols-export/1","counts":{"team":1}}\n` +
                  `{"kind":"signature","algorithm":"ed25519","public_key":"x","signature":"y"}\n`,
              ),
          ],
        ])(),
        team: r.chance(0.5) ? "" : r.pick(hostileStrings(r)),
        publicKey: r.pick([
          "",
          "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
          "x".repeat(5000),
          r.pick(hostileStrings(r)),
        ]),
      };
  }
  throw new Error(`no generator for ${method.name}`);
}

/** A thread or envelope id: plausible, forged or hostile. */
const historyId = (r: Rng): string =>
  r.weighted<() => string>([
    [3, () => `env_${randomString(r, 22, URL_CHARS)}`],
    [2, () => `req_${randomString(r, 22, URL_CHARS)}`],
    [4, () => r.pick(hostileStrings(r))],
  ])();

/**
 * A search query: words, websearch operators and tsquery syntax that websearch_to_tsquery
 * must take as words, very long ones, odd Unicode.
 */
const searchQuery = (r: Rng): string =>
  r.weighted<() => string>([
    [3, () => r.pick(["parser", "plan", "shutdown", "hello world", "the", "a"])],
    [
      4,
      () =>
        r.pick([
          '"unclosed',
          '""',
          "-",
          "or",
          "a or or b",
          "-(a | b) & !c",
          "a:* & b:*",
          "'a' <-> 'b'",
          "!!!",
          "(((",
          "x <2> y",
          "\\",
          "a & ! & | b",
          "🙂 ünïcödé 中文 العربية",
          "​‍﻿",
          "á́́",
          "x".repeat(1024),
          "x ".repeat(512),
          `${"a or ".repeat(200)}b`,
          '"a b c" -"d e"'.repeat(40),
        ]),
    ],
    [3, () => r.pick(hostileStrings(r))],
    [1, () => randomString(r, 1 + r.int(1100), `${URL_CHARS} "'-|&!():*<>`)],
  ])();

/** A lease's resource: usually a plausible glob or name, sometimes hostile. */
const leaseResource = (r: Rng): string =>
  r.pick([
    "src/**",
    "src/a.ts",
    "**/*.md",
    "task:t-held",
    "db:migrations",
    "",
    "/etc/passwd",
    "../x",
    "a//b",
    "C:\\x",
    "x:",
    `${"a/".repeat(600)}b`,
    "*".repeat(1000),
    "src/\u0000",
  ]);

/** A lease id: none of the target team's (made during the storm), or hostile. */
const leaseId = (r: Rng): string =>
  r.pick(["", "lease_x", "lease_AAAAAAAAAAAAAAAA", "x".repeat(5000), "' OR 1=1 --"]);

const pageSize = (r: Rng) => r.pick([0, 1, 50, 500, 501, 2 ** 32 - 1]);

const pageToken = (r: Rng) =>
  r.pick([
    "",
    "",
    "0",
    "5",
    "9223372036854775807",
    "9223372036854775808",
    "99999999999999999999",
    "-1",
    "abc",
    r.pick(hostileStrings(r)),
  ]);

// ---------------------------------------------------------------------------------------
// JSON bodies: proto JSON of a generated request, then mutated as JSON and as text.

type Json = JsonValue;

function durationJson(d: { seconds: bigint; nanos: number }): string {
  const frac = d.nanos === 0 ? "" : `.${String(Math.abs(d.nanos)).padStart(9, "0")}`;
  return `${d.seconds}${frac}s`;
}

/** Proto JSON of the init object (durations written by hand: they may be out of range). */
export function toJsonLoose(method: DescMethod, init: Record<string, unknown>): Json {
  const durations: [string, { seconds: bigint; nanos: number }][] = [];
  const copy = { ...init };
  for (const key of ["ttl", "timeout"]) {
    const d = copy[key] as { seconds: bigint; nanos: number } | undefined;
    if (d) {
      durations.push([key, d]);
      delete copy[key];
    }
  }
  const json = toJson(method.input, create(method.input, copy as never)) as Record<string, Json>;
  for (const [key, d] of durations) json[key] = durationJson(d);
  return json;
}

const wrongValues = (r: Rng): Json[] => [
  null,
  true,
  0,
  -1,
  1.5,
  1e300,
  "",
  "str",
  "NaN",
  "Infinity",
  [],
  [1, "a", null],
  {},
  { nested: { deeper: [r.int(100)] } },
];

const enumNames = [
  "REQUEST_STATUS_PENDING",
  "REQUEST_STATUS_BOGUS",
  "request_status_pending",
  "REQUEST_KIND_SHUTDOWN",
  "REQUEST_KIND_NOPE",
  "PERMISSION_MODE_PLAN",
  "PERMISSION_MODE_ROOT",
  "TASK_STATUS_COMPLETED",
  "TASK_STATUS_EXPLODED",
  "TASK_STATE_DONE",
  "TASK_STATE_LOST",
  "REQUEST_KIND_TASK_ASSIGN",
  "MEMBER_ROLE_LEAD",
  "99",
  "",
];

const int64Texts: Json[] = [
  "18446744073709551615",
  "18446744073709551616",
  "9223372036854775808",
  "-1",
  "1.5",
  "1e3",
  "0x10",
  " 1",
  "",
  2 ** 64,
  1e19,
  -5,
  2.5,
];

/** Every (parent, key) of a JSON tree, to pick one to mutate. */
function slots(node: Json, out: [Record<string, Json> | Json[], string | number][] = []) {
  if (Array.isArray(node)) {
    node.forEach((child, i) => {
      out.push([node, i]);
      slots(child, out);
    });
  } else if (node !== null && typeof node === "object") {
    for (const [k, child] of Object.entries(node)) {
      out.push([node, k]);
      if (child !== undefined) slots(child, out);
    }
  }
  return out;
}

const setSlot = (parent: Record<string, Json> | Json[], key: string | number, v: Json) => {
  (parent as Record<string | number, Json>)[key] = v;
};

const snake = (k: string) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Marks a slot whose value is spliced in raw (deep nesting, duplicate keys, bare numbers). */
const RAW = "\u0001RAW\u0001";

function deepNesting(r: Rng): string {
  const n = r.pick([1_000, 10_000, 100_000, 400_000]);
  return r.chance(0.5)
    ? `${"[".repeat(n)}${"]".repeat(n)}`
    : `${'{"a":'.repeat(n)}1${"}".repeat(n)}`;
}

/** Applies 0..3 JSON-level mutations, then maybe a text-level one. */
export function mutateJson(r: Rng, json: Json): { text: Buffer; notes: string[] } {
  const notes: string[] = [];
  const raws: string[] = [];
  let root = structuredClone(json) as Json;
  const rounds = r.weighted([
    [3, 0],
    [4, 1],
    [2, 2],
    [1, 3],
  ] as const);
  for (let i = 0; i < rounds; i++) {
    const all = slots(root);
    const op = r.int(9);
    const target = all.length > 0 ? r.pick(all) : undefined;
    if (op === 0 && target) {
      notes.push(`wrong type at ${String(target[1])}`);
      setSlot(target[0], target[1], r.pick(wrongValues(r)));
    } else if (op === 1) {
      notes.push("unknown field");
      const into =
        target && typeof target[0] === "object" && !Array.isArray(target[0]) ? target[0] : root;
      if (into && typeof into === "object" && !Array.isArray(into)) {
        into[r.pick(["bogus", "@type", "from", "team", "seq", "__proto__x"])] = r.pick(
          wrongValues(r),
        );
      }
    } else if (op === 2 && target && !Array.isArray(target[0])) {
      notes.push(`removed ${String(target[1])}`);
      delete (target[0] as Record<string, Json>)[target[1] as string];
    } else if (op === 3 && target) {
      notes.push(`enum-ish value at ${String(target[1])}`);
      setSlot(target[0], target[1], r.chance(0.7) ? r.pick(enumNames) : r.pick([99, -1, 2 ** 31]));
    } else if (op === 4 && target) {
      notes.push(`int64-ish value at ${String(target[1])}`);
      setSlot(target[0], target[1], r.pick(int64Texts));
    } else if (op === 5 && target) {
      notes.push(`huge string at ${String(target[1])}`);
      setSlot(target[0], target[1], "h".repeat(r.pick([70_000, 300_000, 900_000])));
    } else if (op === 6 && target) {
      notes.push(`deep nesting at ${String(target[1])}`);
      raws.push(deepNesting(r));
      setSlot(target[0], target[1], `${RAW}${raws.length - 1}`);
    } else if (op === 7) {
      notes.push("snake_case keys");
      const rename = (node: Json): Json =>
        Array.isArray(node)
          ? node.map(rename)
          : node !== null && typeof node === "object"
            ? Object.fromEntries(
                Object.entries(node).map(([k, v]) => [snake(k), rename(v as Json)]),
              )
            : node;
      root = rename(root);
    } else if (op === 8) {
      notes.push("two oneof cases");
      if (root && typeof root === "object" && !Array.isArray(root)) {
        root.message = { text: "a", shutdownRequest: {} };
      }
    }
  }
  let text = JSON.stringify(root) ?? "null";
  text = text.replace(new RegExp(`"${RAW}(\\d+)"`, "g"), (_, i) => raws[Number(i)] ?? "null");
  let bytes = Buffer.from(text, "utf8");
  if (r.chance(0.3)) {
    const op = r.int(7);
    if (op === 0) {
      notes.push("truncated");
      bytes = bytes.subarray(0, r.int(bytes.length + 1));
    } else if (op === 1) {
      notes.push("invalid UTF-8 in a string");
      const at = bytes.indexOf(0x22); // a quote: the bytes land inside a string (or a key)
      const bad = Buffer.from(r.pick([[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xe2, 0x82]]));
      bytes =
        at < 0
          ? Buffer.concat([bad, bytes])
          : Buffer.concat([bytes.subarray(0, at + 1), bad, bytes.subarray(at + 1)]);
    } else if (op === 2) {
      notes.push("random bytes replaced");
      for (let i = 0; i < 1 + r.int(4) && bytes.length > 0; i++)
        bytes[r.int(bytes.length)] = r.int(256);
    } else if (op === 3) {
      notes.push("not an object");
      bytes = Buffer.from(r.pick(["[]", "null", "1", '"s"', "true", "", " ", "{", "}{"]));
    } else if (op === 4) {
      notes.push("BOM");
      bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]);
    } else if (op === 5) {
      notes.push("duplicate key");
      bytes = Buffer.from(text.replace(/^\{/, '{"to":"worker","to":1,'));
    } else {
      notes.push("trailing garbage");
      bytes = Buffer.concat([bytes, Buffer.from(r.pick(["}", ",", "\u0000", " {} "]))]);
    }
  }
  return { text: bytes, notes };
}

// ---------------------------------------------------------------------------------------
// Binary bodies: the generated request encoded, then mutated at the wire level.

function varint(n: bigint | number): number[] {
  let v = BigInt(n);
  if (v < 0n) v += 2n ** 64n;
  const out: number[] = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) b |= 0x80;
    out.push(b);
  } while (v > 0n);
  return out;
}

const tag = (field: number | bigint, wireType: number) =>
  varint((BigInt(field) << 3n) | BigInt(wireType));

const lenField = (field: number, data: ArrayLike<number>) => [
  ...tag(field, 2),
  ...varint(data.length),
  ...Array.from(data),
];

/** String fields per method, as field-number paths (for invalid UTF-8). */
const stringPaths = new Map<DescMethod, number[][]>([
  [M.createTeam, [[1], [2]]],
  [M.addMember, [[1]]],
  [M.removeMember, [[1]]],
  [M.send, [[1], [3], [2, 1], [2, 2, 1], [2, 4, 1], [2, 3, 1], [2, 8, 1], [2, 11, 2], [2, 13, 2]]],
  [M.getRequest, [[1]]],
  [M.awaitRequest, [[1]]],
  [M.cancelRequest, [[1]]],
  [M.listRequests, [[3], [5]]],
  [M.getTask, [[1]]],
  [M.listTasks, [[1], [4]]],
  [M.createTask, [[1], [2], [3], [4], [5]]],
  [M.updateTask, [[1], [2], [3], [4], [5], [6], [7], [8]]],
  [M.deleteTask, [[1]]],
  [M.importTeam, [[2], [3]]],
]);

/** Field numbers per method, for wrong wire types and lying lengths. */
const fieldNumbers = new Map<DescMethod, number[]>(
  TeamService.methods.map((m) => [m, m.input.fields.map((f) => f.number)]),
);
/** The request's field numbers (field 1 for a request without fields). */
const knownFields = (m: DescMethod) => {
  const known = fieldNumbers.get(m) ?? [];
  return known.length > 0 ? known : [1];
};

/** A leaf nested in length-delimited fields along `path` (outermost first). */
const nestLen = (path: number[], leaf: number[]): number[] => {
  const [head, ...rest] = path;
  return head === undefined ? leaf : lenField(head, nestLen(rest, leaf));
};

function deepGroups(n: number): Buffer {
  const open = tag(99, 3);
  const close = tag(99, 4);
  const out = Buffer.alloc(n * (open.length + close.length));
  let at = 0;
  for (let i = 0; i < n; i++) for (const b of open) out[at++] = b;
  for (let i = 0; i < n; i++) for (const b of close) out[at++] = b;
  return out;
}

/** Unknown field 15 nested n deep (length-delimited), around a one-field message. */
function deepLen(n: number): Buffer {
  const leaf = [0x08, 0x01];
  const sizes = [leaf.length];
  for (let i = 1; i <= n; i++) {
    const inner = sizes[i - 1] as number;
    sizes.push(tag(15, 2).length + varint(inner).length + inner);
  }
  const out = Buffer.alloc(sizes[n] as number);
  let at = 0;
  for (let i = n; i >= 1; i--) {
    for (const b of [...tag(15, 2), ...varint(sizes[i - 1] as number)]) out[at++] = b;
  }
  for (const b of leaf) out[at++] = b;
  return out;
}

export function mutateBinary(
  r: Rng,
  method: DescMethod,
  encoded: Uint8Array,
): { bytes: Buffer; notes: string[] } {
  let bytes = Buffer.from(encoded);
  const notes: string[] = [];
  const rounds = r.weighted([
    [4, 0],
    [4, 1],
    [2, 2],
  ] as const);
  for (let i = 0; i < rounds; i++) {
    const op = r.int(13);
    if (op === 0 && bytes.length > 0) {
      const flips = 1 + r.int(8);
      notes.push(`${flips} bit flips`);
      for (let k = 0; k < flips; k++) {
        const at = r.int(bytes.length);
        bytes[at] = (bytes[at] as number) ^ (1 << r.int(8));
      }
    } else if (op === 1) {
      notes.push("truncated");
      bytes = bytes.subarray(0, r.int(bytes.length + 1));
    } else if (op === 2) {
      notes.push("random bytes inserted");
      const at = r.int(bytes.length + 1);
      bytes = Buffer.concat([bytes.subarray(0, at), r.bytes(1 + r.int(16)), bytes.subarray(at)]);
    } else if (op === 3) {
      const field = r.pick(knownFields(method));
      const wt = r.pick([0, 1, 2, 3, 4, 5, 6, 7]);
      notes.push(`field ${field} with wire type ${wt}`);
      const payload =
        wt === 0
          ? varint(r.int(1000))
          : wt === 1
            ? Array.from(r.bytes(8))
            : wt === 2
              ? [...varint(3), 1, 2, 3]
              : wt === 5
                ? Array.from(r.bytes(4))
                : [];
      bytes = Buffer.concat([bytes, Buffer.from([...tag(field, wt), ...payload])]);
    } else if (op === 4) {
      const field = r.pick([0n, 2n ** 29n - 1n, 2n ** 29n, 2n ** 32n, 2n ** 61n]);
      notes.push(`field number ${field}`);
      bytes = Buffer.concat([bytes, Buffer.from([...tag(field, 0), 1])]);
    } else if (op === 5) {
      const field = r.pick(knownFields(method));
      const claimed = r.pick([10, 1000, 2 ** 31 - 1, 2 ** 32 - 1]);
      notes.push(`length prefix of field ${field} says ${claimed}`);
      bytes = Buffer.concat([bytes, Buffer.from([...tag(field, 2), ...varint(claimed), 1, 2, 3])]);
    } else if (op === 6) {
      notes.push("varint longer than 10 bytes");
      bytes = Buffer.concat([bytes, Buffer.from([0x08, ...new Array(11).fill(0xff), 0x01])]);
    } else if (op === 7) {
      const paths = stringPaths.get(method);
      const path = paths ? r.pick(paths) : [99];
      const bad = r.pick([[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0x61, 0x80]]);
      notes.push(`invalid UTF-8 in field ${path.join(".")}`);
      bytes = Buffer.concat([bytes, Buffer.from(nestLen(path, bad))]);
    } else if (op === 8) {
      const n = r.pick([100, 5_000, 50_000, 200_000]);
      notes.push(`groups nested ${n} deep`);
      bytes = Buffer.concat([bytes, deepGroups(n)]);
    } else if (op === 9) {
      const n = r.pick([100, 2_000, 20_000]);
      notes.push(`length-delimited fields nested ${n} deep`);
      const nested = deepLen(n);
      bytes = Buffer.concat([
        bytes,
        Buffer.from(method === M.send ? nestLen([2, 2], Array.from(nested)) : lenField(99, nested)),
      ]);
    } else if (op === 10) {
      notes.push("random range deleted");
      const at = r.int(bytes.length + 1);
      bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + 1 + r.int(8))]);
    } else if (op === 11) {
      notes.push("duplicated");
      bytes = Buffer.concat([bytes, bytes]);
    } else {
      notes.push("random bytes");
      bytes = Buffer.from(r.bytes(r.int(64)));
    }
  }
  return { bytes, notes };
}

export function encodeBinary(method: DescMethod, init: Record<string, unknown>): Uint8Array {
  return toBinary(method.input, create(method.input, init as never));
}

// ---------------------------------------------------------------------------------------
// Whole cases: transport, path, headers, body.

export type Transport =
  | "connect-h1"
  | "connect-h2"
  | "grpc-h2"
  | "grpc-h1"
  | "grpc-web-h1"
  | "connect-stream-h1"
  | "connect-stream-h2";

export type Judge = "connect-unary" | "connect-stream" | "grpc" | "grpc-web";

export interface FuzzCase {
  index: number;
  method: DescMethod;
  path: string;
  transport: Transport;
  judge: Judge;
  credential: Credential;
  headers: Record<string, string>;
  body: Buffer;
  /** The message as the server should read it (for decoding what a success did). */
  payload: { bytes: Buffer; binary: boolean } | undefined;
  /** How the payload was made and broken, for the report. */
  notes: string[];
  /** A content type or path the server is expected not to accept (415 / 404 are fine). */
  expectHttpRefusal: boolean;
  /** HTTP/1.1: send without content-length. */
  chunked: boolean;
}

const READ_MAX_BYTES = 1024 * 1024;

function authorization(r: Rng, c: Credential, w: FuzzWorld): string | undefined {
  switch (c) {
    case "lead":
    case "worker":
    case "revoked":
    case "other-team":
      return `Bearer ${w.tokens[c]}`;
    case "unknown":
      return `Bearer tp_${randomString(r, 43)}`;
    case "malformed":
      return r.pick([
        "Bearer x",
        "Bearer",
        `Bearer tp_${randomString(r, 42)}`,
        "tp_zzz",
        "Bearer a b",
      ]);
    case "basic":
      return `Basic ${w.tokens.lead}`;
    case "missing":
      return undefined;
  }
}

/** A gzip stream cut short (a valid header, then nothing or part of the data). */
function truncatedGzip(r: Rng, payload: Buffer): Buffer {
  const gz = gzipSync(payload);
  return gz.subarray(0, 10 + r.int(Math.max(1, gz.length - 12)));
}

/**
 * The methods the storm calls: all but RotateToken and DeleteTeam, whose success (a garbled
 * body reads as "my own token", a lead's call names its own team) would end the storm's own
 * credentials; their hostile inputs are in call-pipeline.test.ts and team-lifecycle.test.ts.
 */
export const STORM_METHODS = TeamService.methods.filter(
  (m) => m !== M.rotateToken && m !== M.deleteTeam,
);

export function makeCase(seed: number, index: number, w: FuzzWorld): FuzzCase {
  const r = new Rng(seed, index);
  const method = r.pick(STORM_METHODS);
  // Server and client streams (Subscribe, ImportTeam) speak the streaming framings only.
  const streaming = method.methodKind !== "unary";
  const credential = r.weighted<Credential>([
    [6, "lead"],
    [5, "worker"],
    [1, "revoked"],
    [1, "other-team"],
    [1, "unknown"],
    [1, "malformed"],
    [1, "missing"],
    [1, "basic"],
  ]);
  const transport: Transport = streaming
    ? r.weighted([
        [3, "grpc-h2"],
        [2, "connect-stream-h2"],
        [2, "connect-stream-h1"],
        [1, "grpc-web-h1"],
      ] as const)
    : r.weighted([
        [6, "connect-h1"],
        [3, "connect-h2"],
        [7, "grpc-h2"],
        [1, "grpc-h1"],
        [2, "grpc-web-h1"],
      ] as const);
  const judge: Judge = transport.startsWith("connect-stream")
    ? "connect-stream"
    : transport.startsWith("connect")
      ? "connect-unary"
      : transport.startsWith("grpc-web")
        ? "grpc-web"
        : "grpc";
  const framed = judge !== "connect-unary";
  // gRPC-Web and Connect JSON are common; gRPC mostly speaks protobuf.
  const binary = judge === "grpc" ? r.chance(0.85) : r.chance(0.45);

  const notes: string[] = [];
  const init = requestInit(r, method, w, credential);
  let payload: Buffer;
  const shape = r.weighted([
    [12, "valid"],
    [24, "mutated"],
    [4, "random"],
    [1, "oversized"],
  ] as const);
  if (shape === "random") {
    notes.push("random bytes");
    payload = Buffer.from(r.bytes(r.int(300)));
  } else if (shape === "oversized") {
    const size = READ_MAX_BYTES + 1 + r.int(512 * 1024);
    notes.push(`oversized: ${size} bytes`);
    if (binary) {
      payload = Buffer.from(lenField(1, Buffer.alloc(size, 0x61)));
    } else {
      payload = Buffer.from(JSON.stringify({ to: "worker", message: { text: "o".repeat(size) } }));
    }
  } else if (binary) {
    const encoded = encodeBinary(method, init);
    if (shape === "mutated") {
      const m = mutateBinary(r, method, encoded);
      notes.push(...m.notes);
      payload = m.bytes;
    } else {
      payload = Buffer.from(encoded);
    }
  } else {
    const json = toJsonLoose(method, init);
    if (shape === "mutated") {
      const m = mutateJson(r, json);
      notes.push(...m.notes);
      payload = m.text;
    } else {
      payload = Buffer.from(JSON.stringify(json));
    }
  }

  // Content type, maybe wrong.
  const rightType =
    judge === "connect-unary"
      ? binary
        ? "application/proto"
        : "application/json"
      : judge === "connect-stream"
        ? binary
          ? "application/connect+proto"
          : "application/connect+json"
        : judge === "grpc-web"
          ? binary
            ? "application/grpc-web+proto"
            : "application/grpc-web+json"
          : binary
            ? r.pick(["application/grpc", "application/grpc+proto"])
            : "application/grpc+json";
  let contentType = rightType;
  let expectHttpRefusal = false;
  if (r.chance(0.04)) {
    contentType = r.pick([
      "text/plain",
      "application/xml",
      "application/json; charset=utf-16",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/grpc+xml",
      "application/protobuf",
      "",
      streaming ? "application/json" : "application/connect+json",
    ]);
    notes.push(`content-type ${JSON.stringify(contentType)}`);
    expectHttpRefusal = true;
  }
  let path = `/${TeamService.typeName}/${method.name}`;
  if (r.chance(0.01)) {
    path = r.pick([
      `/${TeamService.typeName}/DeleteEverything`,
      `/${TeamService.typeName}/${method.name.toLowerCase()}`,
      `/team.v1.TeamServic/${method.name}`,
      `/${TeamService.typeName}/${method.name}/extra`,
    ]);
    notes.push(`path ${path}`);
    expectHttpRefusal = true;
  }

  const headers: Record<string, string> = {};
  if (contentType !== "") headers["content-type"] = contentType;
  if (judge === "connect-unary" || judge === "connect-stream") {
    if (r.chance(0.9)) headers["connect-protocol-version"] = r.chance(0.97) ? "1" : "2";
  }
  if (judge === "grpc") headers.te = "trailers";
  if (judge === "grpc-web") headers["x-grpc-web"] = "1";
  const auth = authorization(r, credential, w);
  if (auth !== undefined) headers.authorization = auth;

  // Deadlines: AwaitRequest always gets a short one (it would otherwise wait up to 60 s).
  const timeoutHeader =
    judge === "connect-unary"
      ? "connect-timeout-ms"
      : judge === "connect-stream"
        ? "connect-timeout-ms"
        : "grpc-timeout";
  if (method === M.awaitRequest) {
    headers[timeoutHeader] = timeoutHeader === "grpc-timeout" ? "400m" : "400";
  } else if (r.chance(0.03)) {
    const bad =
      timeoutHeader === "grpc-timeout"
        ? r.pick(["1X", "100000000S", "", "-1S", "abc", "0n"])
        : r.pick(["abc", "-1", "99999999999", "", "1.5", "0"]);
    headers[timeoutHeader] = bad;
    notes.push(`${timeoutHeader}: ${JSON.stringify(bad)}`);
  }

  // Framing and compression.
  let body: Buffer;
  let serverReads: Buffer | undefined = payload;
  if (!framed) {
    body = payload;
    if (r.chance(0.04)) {
      const enc = r.pick(["gzip-valid", "gzip-garbage", "gzip-truncated", "br", "bogus"]);
      notes.push(`content-encoding ${enc}`);
      headers["content-encoding"] = enc.startsWith("gzip") ? "gzip" : enc;
      if (enc === "gzip-valid") body = gzipSync(payload);
      else if (enc === "br" && payload.length === 0) {
        // An empty body is an empty message, whatever it claims to be compressed with.
      } else {
        serverReads = undefined;
        if (enc === "gzip-garbage") body = Buffer.from(r.bytes(20 + r.int(50)));
        if (enc === "gzip-truncated") body = truncatedGzip(r, payload);
      }
    }
  } else {
    const frame = r.weighted([
      [40, "normal"],
      [2, "longer"],
      [2, "shorter"],
      [2, "compressed-no-encoding"],
      [2, "compressed-garbage"],
      [1, "compressed-truncated"],
      [2, "compressed-valid"],
      [1, "unknown-encoding"],
      [2, "two-messages"],
      [2, "no-message"],
      [1, "partial-header"],
      [1, "huge-length"],
      [1, "odd-flags"],
    ] as const);
    const encodingHeader =
      judge === "connect-stream" ? "connect-content-encoding" : "grpc-encoding";
    if (frame !== "normal") notes.push(`frame: ${frame}`);
    switch (frame) {
      case "normal":
        body = envelope(0, payload);
        break;
      case "longer":
        body = envelope(0, payload, payload.length + 1 + r.int(100));
        serverReads = undefined;
        break;
      case "shorter": {
        const claimed = Math.max(0, payload.length - 1 - r.int(4));
        body = envelope(0, payload, claimed);
        if (claimed !== payload.length) serverReads = undefined;
        break;
      }
      case "compressed-no-encoding":
        body = envelope(1, r.chance(0.5) ? payload : Buffer.from(r.bytes(r.int(40))));
        serverReads = undefined;
        break;
      case "compressed-garbage":
        headers[encodingHeader] = "gzip";
        body = envelope(1, Buffer.from(r.bytes(10 + r.int(40))));
        serverReads = undefined;
        break;
      case "compressed-truncated":
        headers[encodingHeader] = "gzip";
        body = envelope(1, truncatedGzip(r, payload));
        serverReads = undefined;
        break;
      case "compressed-valid":
        headers[encodingHeader] = "gzip";
        body = envelope(1, gzipSync(payload));
        break;
      case "unknown-encoding":
        // Not "br": the server accepts brotli (ACCEPT_COMPRESSION), and an empty compressed
        // message then decodes as an empty request (a read-only ExportTeam succeeded).
        headers[encodingHeader] = r.pick(["snappy", "x-bogus", "deflate"]);
        body = envelope(1, payload);
        serverReads = undefined;
        break;
      case "two-messages":
        body = Buffer.concat([envelope(0, payload), envelope(0, payload)]);
        break;
      case "no-message":
        body = Buffer.alloc(0);
        serverReads = undefined;
        break;
      case "partial-header":
        body = Buffer.from([0, 0, 0]);
        serverReads = undefined;
        break;
      case "huge-length":
        body = envelope(0, payload, 0xffffffff);
        serverReads = undefined;
        break;
      case "odd-flags":
        // Flags other than "compressed": the server may ignore them and read the message.
        body = envelope(r.pick([0x02, 0x80, 0xfe]), payload);
        break;
    }
  }
  return {
    index,
    method,
    path,
    transport,
    judge,
    credential,
    headers,
    body,
    payload: serverReads && !expectHttpRefusal ? { bytes: serverReads, binary } : undefined,
    notes,
    expectHttpRefusal,
    chunked: transport.endsWith("h1") && r.chance(0.15),
  };
}
