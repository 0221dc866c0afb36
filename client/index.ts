// The public surface of the team-protocols client. Everything else in client/ is internal.

export type {
  EnvelopeStored,
  MemberChanged,
  RequestChanged,
  TaskChanged,
  TeamEvent,
} from "@team-protocols/contract/team/v1/feed_pb.js";
export type {
  Attempt,
  Envelope,
  Member,
  RequestRecord,
  Task,
} from "@team-protocols/contract/team/v1/records_pb.js";
export type { BackoffOptions } from "./backoff.js";
export { describeEnvelope, describeMessage, describeRequest } from "./describe.js";
export type { Inbox, InboxOptions, InboxStatus } from "./inbox.js";
export {
  answerMessage,
  type MessageInit,
  planRequestMessage,
  planResponseMessage,
  resultSignoffRequestMessage,
  resultSignoffResponseMessage,
  shutdownRequestMessage,
  shutdownResponseMessage,
  type TaskReport,
  taskAssignMessage,
  taskClaimRequestMessage,
  taskClaimResponseMessage,
  taskHandoffRequestMessage,
  taskHandoffResponseMessage,
  taskNotificationMessage,
  textMessage,
} from "./messages.js";
export {
  type AttemptOutcomeName,
  attemptOutcomeName,
  memberRoleName,
  memberStatusName,
  type PermissionModeName,
  permissionModeName,
  type RequestKindName,
  type RequestStatusName,
  requestKindName,
  requestStatusName,
  type TaskProgressName,
  type TaskStateName,
  type TaskStatusName,
  taskChangeName,
  taskProgressName,
  taskStateName,
  taskStatusName,
} from "./names.js";
export { createPromptReader, type PromptReader } from "./prompt-reader.js";
export { type PromptTextOptions, toPromptText } from "./prompt-text.js";
export { newMessageId, retryWhileUnavailable } from "./send-retry.js";
export {
  type AnswerOptions,
  type AttemptFilter,
  createTeamClient,
  type NewTask,
  type RequestFilter,
  type RequestOptions,
  type SendOptions,
  type TaskChanges,
  type TaskFilter,
  type TeamClient,
  type TeamClientOptions,
} from "./team-client.js";
export { TeamError, type Violation, violationOf } from "./team-error.js";
export type { TeamWatch, TeamWatchOptions, TeamWatchStatus } from "./team-watch.js";
export type { Protocol } from "./transport.js";
