import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { z } from "zod";

/** A channel event as Claude Code receives it from a channel server. */
export interface ChannelEventSeen {
  content: string;
  meta: Record<string, string>;
}

const channelNotification = z.object({
  method: z.literal("notifications/claude/channel"),
  params: z.object({ content: z.string(), meta: z.record(z.string(), z.string()) }),
});

/** Collects the channel events an MCP client receives (as Claude Code's listener would). */
export function collectChannelEvents(client: Client): ChannelEventSeen[] {
  const seen: ChannelEventSeen[] = [];
  client.setNotificationHandler(channelNotification, (n) => {
    seen.push(n.params);
  });
  return seen;
}
