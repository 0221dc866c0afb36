import type { Identity } from "./identity.js";

/**
 * A role's duties, one line each, as the `teammate` and `team-lead` prompts and the
 * SessionStart hook give them. Answers are spelled as send_message's inputs.
 */
export function roleDuties(role: Identity["role"]): string[] {
  if (role === "observer") {
    return [
      "- You are an observer: you may read (list_members, list_requests, get_request, await_request, list_leases, journal) and nothing else; you receive no messages.",
    ];
  }
  if (role === "approver") {
    return [
      "- You are an approver: you answer the approvals addressed to the lead, on its behalf, and nothing else " +
        "(plan_approval_request, permission_request, task_claim_request, result_signoff_request). " +
        "list_requests shows what is pending; the lead and the requester both receive your answer.",
      "- Answer each once with send_message to the requester, exactly as the request's text says " +
        '(e.g. {type: "permission_response", request_id, allow, reason}); a no needs a reason or feedback.',
    ];
  }
  if (role === "lead") {
    return [
      "- Call wait_for_messages to receive plans, task notifications and answers.",
      "- Answer each plan_approval_request once: send_message to its sender with " +
        '{type: "plan_approval_response", request_id, approve, feedback}. An approved ' +
        "teammate inherits your permission mode; a rejection needs feedback saying what to change.",
      '- To stop a teammate, send it {type: "shutdown_request", reason}; it approves (and is ' +
        "stopped) or rejects with a reason. remove_member stops it at once.",
      "- Answer each task_claim_request once: send_message to the claimant with " +
        '{type: "task_claim_response", request_id, approve, reason} (a rejection needs a reason). ' +
        'Give a task directly with {type: "task_assign", task_id, note} to the teammate.',
      "- Answer each result_signoff_request once: send_message to its owner with " +
        '{type: "result_signoff_response", request_id, approve, feedback}: approving makes the ' +
        "task done; a rejection needs feedback saying what to change. list_tasks shows the team's tasks.",
      "- Answer each permission_request once (a teammate's runtime asks to use a tool): send_message " +
        'to the teammate with {type: "permission_response", request_id, allow, reason}; a deny needs a reason.',
      "- A teammate may hand a task back to you with task_handoff_request: answer it once with " +
        '{type: "task_handoff_response", request_id, accept} (the task becomes unowned again).',
      "- list_leases shows who holds which files; break a teammate's lease only when needed, with " +
        "release_lease {lease_id, reason} (it is told why).",
      "- add_member gives a new teammate its token and MCP configuration.",
      "- A refused tool call starts with the rule id and says how to fix it: fix the call.",
    ];
  }
  return [
    "- Call wait_for_messages whenever you are idle or between steps; handle each message.",
    "- A shutdown_request must be answered exactly once with send_message to the lead: " +
      '{type: "shutdown_response", request_id, approve: true} to stop (your token is then ' +
      "revoked), or approve: false with a reason to keep working.",
    "- In plan mode, submit your plan before acting: send_message to the lead with " +
      '{type: "plan_approval_request", plan}, then wait for the plan_approval_response. ' +
      "On a rejection, revise using the feedback and submit again (a new request).",
    "- When a task ends, report it to the lead: " +
      '{type: "task_notification", task_id, status: "completed" | "failed" | "stopped", summary, result}.',
    "- Tasks: list_tasks {ready: true} shows what you may claim; claim one with send_message to the lead " +
      '{type: "task_claim_request", task_id, note} (it is yours once the lead approves). A ' +
      "task_assign from the lead makes a task yours at once.",
    '- When a task you own is done, ask the lead to sign it off: {type: "result_signoff_request", ' +
      "task_id, result, summary}; on a rejection act on the feedback and ask again.",
    '- Hand a task you own to another teammate with {type: "task_handoff_request", task_id, note}; ' +
      'answer a task_handoff_request sent to you once: {type: "task_handoff_response", request_id, ' +
      "accept} (declining needs a reason).",
    '- Before you edit files, lease them: acquire_lease {resource: "src/parser/**", reason} ' +
      "(renew_lease while you work, release_lease when done). A lease-held refusal, or an edit " +
      "denied by the lease hook, names the holder: ask it with send_message, or work elsewhere.",
    "- A refused tool call starts with the rule id and says how to fix it: fix the call.",
  ];
}
