import type { ContentBlock, ModelRequest } from "./fake-anthropic.js";

/**
 * What a scripted model reads: the conversation as Claude Code sent it, reduced to text, and
 * the protocol blocks toPromptText writes (`<shutdown-request request_id="…">…`), wherever
 * they were shown (a tool result, a hook's context, a Stop hook's feedback, a channel event).
 */

/** Everything shown since the model's own last turn (tool results, hook contexts, prompts). */
export function newSinceLastTurn(request: ModelRequest): string {
  const messages = request.messages;
  let start = messages.length;
  while (start > 0 && messages[start - 1]?.role !== "assistant") start--;
  return messages
    .slice(start)
    .map((m) => flatten(m.content))
    .join("\n");
}

export function flatten(content: string | ContentBlock[] | undefined): string {
  if (typeof content === "string") return content;
  return (content ?? [])
    .map((b) =>
      b.type === "text"
        ? (b.text ?? "")
        : b.type === "tool_result"
          ? readJson(flatten(b.content))
          : b.type === "tool_use"
            ? `${b.name} ${JSON.stringify(b.input)}`
            : "",
    )
    .join("\n");
}

/**
 * A tool result as a model reads it. Claude Code hands the model a tool's structuredContent
 * as JSON; a model reads the strings in it as text (`\n` a line break, `\"` a quote), so the
 * scripted model reads each value: a string decoded, anything else as `key: value`. What the
 * model was shown is still asserted on: a word missing from the JSON is missing here.
 */
export function readJson(text: string): string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return text;
  }
  if (typeof value !== "object" || value === null) return text;
  const lines: string[] = [];
  const walk = (v: unknown, key: string): void => {
    if (typeof v === "string") lines.push(v);
    else if (Array.isArray(v)) for (const item of v) walk(item, key);
    else if (typeof v === "object" && v !== null)
      for (const [k, x] of Object.entries(v)) walk(x, k);
    else lines.push(`${key}: ${String(v)}`);
  };
  walk(value, "");
  return lines.join("\n");
}

/** Every text the model was shown in this request, system prompt included. */
export function everythingShown(request: ModelRequest): string {
  return [flatten(request.system), ...request.messages.map((m) => flatten(m.content))].join("\n");
}

export interface ProtocolBlock {
  tag: string;
  attrs: Record<string, string>;
  body: string;
}

/** The protocol blocks of a text, e.g. every `<shutdown-request …>…</shutdown-request>`. */
export function protocolBlocks(text: string, tag?: string): ProtocolBlock[] {
  const found: ProtocolBlock[] = [];
  const re = /<([a-z-]+(?:-request|-response|-update)|message|channel)( [^>]*)?>([\s\S]*?)<\/\1>/g;
  for (const m of text.matchAll(re)) {
    const [, name = "", rawAttrs = "", body = ""] = m;
    if (tag && name !== tag) continue;
    const attrs: Record<string, string> = {};
    for (const a of rawAttrs.matchAll(/([a-z_]+)="([^"]*)"/g)) attrs[a[1] ?? ""] = a[2] ?? "";
    found.push({ tag: name, attrs, body });
  }
  return found;
}

/** True once the model has the team's MCP tools (Claude Code connects MCP servers in the background). */
export const hasTeamTools = (request: ModelRequest) =>
  (request.tools ?? []).some((t) => t.name === "mcp__team__send_message");

/** The turn a model takes while the team's MCP server is still connecting. */
export const waitForTeamTools = { toolCalls: [{ name: "WaitForMcpServers", input: {} }] };

/** A tool call of the team's MCP server. */
export const teamTool = (name: string, input: Record<string, unknown>) => ({
  toolCalls: [{ name: `mcp__team__${name}`, input }],
});
