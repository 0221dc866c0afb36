import type { PermissionMode as PermissionModeEnum } from "@team-protocols/contract/team/v1/enums_pb.js";
import {
  attemptOutcomeWords,
  type EnumWords,
  permissionModeWords,
  requestKindWords,
  requestStatusWords,
  taskProgressWords,
  taskStateWords,
} from "@team-protocols/contract/words.js";
import type { PermissionMode, RequestKind, RequestStatus } from "./words.js";

// Between the store's words and the contract's enums: the contract's one table of words
// (gen/words.ts), with the server's readings of UNSPECIFIED.

export const permissionModeToProto = (mode: PermissionMode) => permissionModeWords.valueOf(mode);

/** UNSPECIFIED means "the default"; undefined for a number outside the enum. */
export function permissionModeFromProto(mode: PermissionModeEnum): PermissionMode | undefined {
  return mode === 0 ? "default" : permissionModeWords.wordOfKnown(mode);
}

export const requestKindToProto = (kind: RequestKind) => requestKindWords.valueOf(kind);
export const requestStatusToProto = (status: RequestStatus) => requestStatusWords.valueOf(status);

/**
 * A filter's enum value as the store's word: null for UNSPECIFIED (0, "any"), undefined for a
 * value outside the enum (proto3 enums are open: a client may send any number).
 */
function filterWord<W extends string, V extends number>(
  words: EnumWords<W, V>,
  value: number,
): W | null | undefined {
  return value === 0 ? null : words.wordOfKnown(value);
}

export const requestKindFromProto = (kind: number) => filterWord(requestKindWords, kind);
export const requestStatusFromProto = (status: number) => filterWord(requestStatusWords, status);
export const taskStateFromProto = (state: number) => filterWord(taskStateWords, state);
export const attemptOutcomeFromProto = (outcome: number) =>
  filterWord(attemptOutcomeWords, outcome);
export const taskProgressFromProto = (status: number) => filterWord(taskProgressWords, status);
