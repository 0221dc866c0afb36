import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

type Shape = z.ZodRawShape;

interface Tool {
  description: string;
  input: z.ZodObject<Shape>;
  /** Unlisted tools are still callable: the server, not the bridge, decides who may. */
  listed: boolean;
  /** A check of the raw arguments before the schema's: its sentence refuses the call. */
  check: ((args: Record<string, unknown>) => string | undefined) | undefined;
  /** A stand-in's: gets the arguments unchecked (the tool it stands for checks them). */
  raw?: true;
  /** The input's JSON Schema as tools/list gives it, made on the first list (see serve). */
  listedSchema?: { type: "object" };
  /** `signal` aborts when the call is cancelled or its client goes away. */
  run(args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult>;
}

/**
 * The bridge's tools, served on the SDK's low-level Server (McpServer.registerTool would
 * hide an unlisted tool from calls too, and answer bad input with its own wording). Bad
 * input is an isError result naming each field at fault; nothing is sent to the service.
 */
export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();

  registerTool<S extends Shape>(
    name: string,
    config: {
      description: string;
      inputSchema?: S;
      listed?: boolean;
      check?: (args: Record<string, unknown>) => string | undefined;
    },
    run: (args: z.infer<z.ZodObject<S>>, signal: AbortSignal) => Promise<CallToolResult>,
  ): void {
    this.tools.set(name, {
      description: config.description,
      input: z.object(config.inputSchema ?? {}).strict() as unknown as z.ZodObject<Shape>,
      listed: config.listed ?? true,
      check: config.check,
      run: run as Tool["run"],
    });
  }

  /** Answers tools/list and tools/call on `mcp` (before it connects). */
  serve(mcp: McpServer): void {
    const server = mcp.server;
    // listChanged: a bridge that started without its server swaps in the member's tools.
    server.registerCapabilities({ tools: { listChanged: true } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [...this.tools]
        .filter(([, t]) => t.listed)
        .map(([name, t]) => ({
          name,
          description: t.description,
          inputSchema: listedSchema(t),
        })),
    }));
    server.setRequestHandler(CallToolRequestSchema, (req, extra) =>
      this.call(req.params.name, req.params.arguments ?? {}, extra.signal),
    );
  }

  /** One tool call: its input checked (an isError result naming each field), then run. */
  async call(
    name: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    const tool = this.tools.get(name);
    if (!tool) {
      return inputError(
        `unknown-tool: there is no tool "${name}"; list the tools and use one of them`,
      );
    }
    if (tool.raw) return tool.run(args, signal);
    const problem = tool.check?.(args);
    if (problem) return inputError(problem);
    const parsed = tool.input.safeParse(args);
    if (!parsed.success) {
      const problems = parsed.error.issues.map(
        (i) => `${i.path.length ? i.path.join(".") : "(arguments)"}: ${i.message}`,
      );
      return inputError(`invalid-input: ${problems.join("; ")}. Nothing was sent; fix the call.`);
    }
    return tool.run(parsed.data, signal);
  }

  /**
   * The same tools (names, descriptions, inputs), each answered by `run` instead: the
   * stand-ins of a bridge that cannot reach its server yet (offline-bridge.ts).
   */
  standIns(
    run: (
      name: string,
      args: Record<string, unknown>,
      signal: AbortSignal,
    ) => Promise<CallToolResult>,
  ): ToolRegistry {
    const other = new ToolRegistry();
    for (const [name, tool] of this.tools) {
      other.tools.set(name, { ...tool, raw: true, run: (args, signal) => run(name, args, signal) });
    }
    return other;
  }

  /** Serves `other`'s tools from now on (the handlers `serve` set read them per call). */
  replaceWith(other: ToolRegistry): void {
    this.tools.clear();
    for (const [name, tool] of other.tools) this.tools.set(name, tool);
  }
}

/**
 * A tool's input as JSON Schema, made once per tool: the schema never changes, and converting
 * every tool's schema again was most of a tools/list's cost.
 */
function listedSchema(t: Tool): { type: "object" } {
  t.listedSchema ??= z.toJSONSchema(t.input) as { type: "object" };
  return t.listedSchema;
}

const inputError = (text: string): CallToolResult => ({
  content: [{ type: "text", text }],
  isError: true,
});
