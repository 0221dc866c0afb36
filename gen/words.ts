// Hand-written, not generated: the contract's enums as the words agents, people and the
// database use ("REQUEST_STATUS_APPROVED" is "approved"), both ways. The words are derived
// from the generated enums, so a value added to a .proto file has its word without an edit
// here; every package (server, client, MCP bridge, CLI, console) takes its words from this file.
import {
  AttemptOutcome,
  MemberChange,
  MemberRole,
  MemberStatus,
  PermissionMode,
  Presence,
  RequestKind,
  SeenVia,
  RequestStatus,
  TaskChange,
  LeaseMode,
  TaskProgress,
  TaskState,
  TaskStatus,
} from "./team/v1/enums_pb.js";

/** A generated TypeScript enum: names to numbers, and numbers back to names. */
type EnumObject = Record<string, string | number>;

/** The word of each value of an enum but UNSPECIFIED: its name in lower case. */
export type WordOf<E extends EnumObject> = Lowercase<Exclude<Extract<keyof E, string>, "UNSPECIFIED">>;

/** One enum's words both ways. */
export interface EnumWords<W extends string, V extends number> {
  /** Every word, in the order of the enum's numbers. */
  readonly words: readonly W[];
  /** The value of a word. */
  valueOf(word: W): V;
  /** The word of a value; "unspecified" for UNSPECIFIED (0) or a number outside the enum. */
  wordOf(value: V): W | "unspecified";
  /** The word of a value, or undefined for UNSPECIFIED and numbers outside the enum. */
  wordOfKnown(value: number): W | undefined;
  /** The value a string names, or undefined when it is not one of the words. */
  parse(word: string): V | undefined;
}

/** The words of a generated enum (every value but UNSPECIFIED). */
export function enumWords<E extends EnumObject>(
  enumObject: E,
): EnumWords<WordOf<E>, Extract<E[keyof E], number>> {
  type W = WordOf<E>;
  type V = Extract<E[keyof E], number>;
  const byWord = new Map<string, V>();
  const byValue = new Map<number, W>();
  const entries = Object.entries(enumObject)
    .filter((e): e is [string, number] => typeof e[1] === "number" && e[0] !== "UNSPECIFIED")
    .sort((a, b) => a[1] - b[1]);
  for (const [name, value] of entries) {
    byWord.set(name.toLowerCase(), value as V);
    byValue.set(value, name.toLowerCase() as W);
  }
  const words = [...byWord.keys()] as W[];
  return {
    words,
    valueOf: (word) => byWord.get(word) as V,
    wordOf: (value) => byValue.get(value) ?? "unspecified",
    wordOfKnown: (value) => byValue.get(value),
    parse: (word) => byWord.get(word),
  };
}

export type MemberRoleWord = WordOf<typeof MemberRole>;
export type MemberStatusWord = WordOf<typeof MemberStatus>;
export type MemberChangeWord = WordOf<typeof MemberChange>;
export type PermissionModeWord = WordOf<typeof PermissionMode>;
export type RequestKindWord = WordOf<typeof RequestKind>;
export type RequestStatusWord = WordOf<typeof RequestStatus>;
export type TaskStateWord = WordOf<typeof TaskState>;
export type TaskStatusWord = WordOf<typeof TaskStatus>;
export type TaskProgressWord = WordOf<typeof TaskProgress>;
export type TaskChangeWord = WordOf<typeof TaskChange>;
export type AttemptOutcomeWord = WordOf<typeof AttemptOutcome>;
export type LeaseModeWord = WordOf<typeof LeaseMode>;
export type PresenceWord = WordOf<typeof Presence>;
export type SeenViaWord = WordOf<typeof SeenVia>;

export const memberRoleWords = enumWords(MemberRole);
export const memberStatusWords = enumWords(MemberStatus);
export const memberChangeWords = enumWords(MemberChange);
export const permissionModeWords = enumWords(PermissionMode);
export const requestKindWords = enumWords(RequestKind);
export const requestStatusWords = enumWords(RequestStatus);
export const taskStateWords = enumWords(TaskState);
export const taskStatusWords = enumWords(TaskStatus);
export const taskProgressWords = enumWords(TaskProgress);
export const taskChangeWords = enumWords(TaskChange);
export const attemptOutcomeWords = enumWords(AttemptOutcome);
export const leaseModeWords = enumWords(LeaseMode);
export const presenceWords = enumWords(Presence);
export const seenViaWords = enumWords(SeenVia);
