import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A scripted stand-in for the Anthropic Messages API on 127.0.0.1, for running the real
 * Claude Code against. Its "model" is a function of the conversation Claude Code sends: a
 * test decides which tool to call from what the model was shown, as a model would.
 * Answers stream as server-sent events (Claude Code asks with `stream: true`).
 */

/** One content block of a message in a request (what Claude Code shows the model). */
export interface ContentBlock {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: string | ContentBlock[];
  is_error?: boolean;
}

export interface ModelRequest {
  model: string;
  system?: string | ContentBlock[];
  messages: { role: "user" | "assistant"; content: string | ContentBlock[] }[];
  tools?: { name: string; description?: string; input_schema?: unknown }[];
  stream?: boolean;
  max_tokens?: number;
}

/** What the scripted model answers: text, and tool calls (which end the turn with tool_use). */
export interface ModelTurn {
  text?: string;
  toolCalls?: { name: string; input: Record<string, unknown> }[];
}

export type ScriptedModel = (request: ModelRequest) => ModelTurn | Promise<ModelTurn>;

export interface FakeAnthropic {
  url: string;
  /** Every Messages API request Claude Code made, in order. */
  requests: ModelRequest[];
  /** Requests to any other path (for the report of what a runtime asks for). */
  otherPaths: string[];
  close(): Promise<void>;
}

export async function startFakeAnthropic(model: ScriptedModel): Promise<FakeAnthropic> {
  const requests: ModelRequest[] = [];
  const otherPaths: string[] = [];
  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      res.writeHead(500, { "content-type": "application/json" });
      res.end(
        JSON.stringify({ type: "error", error: { type: "api_error", message: String(err) } }),
      );
    });
  });
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const path = (req.url ?? "").split("?")[0];
    if (req.method === "POST" && path === "/v1/messages") {
      const request = JSON.parse(body) as ModelRequest;
      requests.push(request);
      const turn = await model(request);
      if (request.stream) streamTurn(res, request, turn);
      else answerTurn(res, request, turn);
      return;
    }
    otherPaths.push(`${req.method} ${path}`);
    if (req.method === "POST" && path === "/v1/messages/count_tokens") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ input_tokens: Math.ceil(body.length / 4) }));
      return;
    }
    res.writeHead(404, { "content-type": "application/json" });
    res.end(JSON.stringify({ type: "error", error: { type: "not_found_error", message: path } }));
  }
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    otherPaths,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function blocksOf(turn: ModelTurn): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  if (turn.text) blocks.push({ type: "text", text: turn.text });
  for (const call of turn.toolCalls ?? []) {
    blocks.push({
      type: "tool_use",
      id: `toolu_${randomBytes(12).toString("hex")}`,
      name: call.name,
      input: call.input,
    });
  }
  if (blocks.length === 0) blocks.push({ type: "text", text: "Done." });
  return blocks;
}

const stopReason = (turn: ModelTurn) => (turn.toolCalls?.length ? "tool_use" : "end_turn");
const usage = { input_tokens: 10, output_tokens: 10 };
const messageId = () => `msg_${randomBytes(12).toString("hex")}`;

function answerTurn(res: ServerResponse, request: ModelRequest, turn: ModelTurn): void {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(
    JSON.stringify({
      id: messageId(),
      type: "message",
      role: "assistant",
      model: request.model,
      content: blocksOf(turn),
      stop_reason: stopReason(turn),
      stop_sequence: null,
      usage,
    }),
  );
}

/** The streamed form: message_start, each block's start, delta and stop, message_delta, message_stop. */
function streamTurn(res: ServerResponse, request: ModelRequest, turn: ModelTurn): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const event = (type: string, data: Record<string, unknown>) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  event("message_start", {
    message: {
      id: messageId(),
      type: "message",
      role: "assistant",
      model: request.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 1 },
    },
  });
  blocksOf(turn).forEach((block, index) => {
    if (block.type === "text") {
      event("content_block_start", { index, content_block: { type: "text", text: "" } });
      event("content_block_delta", { index, delta: { type: "text_delta", text: block.text } });
    } else {
      event("content_block_start", {
        index,
        content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
      });
      event("content_block_delta", {
        index,
        delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) },
      });
    }
    event("content_block_stop", { index });
  });
  event("message_delta", {
    delta: { stop_reason: stopReason(turn), stop_sequence: null },
    usage: { output_tokens: 10 },
  });
  event("message_stop", {});
  res.end();
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/** Everything a request showed the model, as text: system, messages, tool results, contexts. */
export function shownText(request: ModelRequest): string {
  const flat = (c: string | ContentBlock[] | undefined): string =>
    typeof c === "string"
      ? c
      : (c ?? [])
          .map((b) =>
            b.type === "text"
              ? (b.text ?? "")
              : b.type === "tool_result"
                ? flat(b.content)
                : b.type === "tool_use"
                  ? `${b.name} ${JSON.stringify(b.input)}`
                  : "",
          )
          .join("\n");
  return [flat(request.system), ...request.messages.map((m) => flat(m.content))].join("\n");
}

/** The last message of the conversation as text (what the model reacts to now). */
export function lastShown(request: ModelRequest): string {
  const last = request.messages.at(-1);
  return last ? shownText({ ...request, system: "", messages: [last] }) : "";
}
