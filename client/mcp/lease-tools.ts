import { instant } from "@team-protocols/client/describe.js";
import type { Identity } from "@team-protocols/client/identity.js";
import { leaseModeName, leaseModeNames } from "@team-protocols/client/names.js";
import type { TeamClient } from "@team-protocols/client/team-client.js";
import { type Lease, LeaseSchema } from "@team-protocols/contract/team/v1/records_pb.js";
import { z } from "zod";
import { plain } from "./plain.js";
import type { ToolRegistry } from "./tool-registry.js";
import { guarded, ok } from "./tool-result.js";

/**
 * The lease tools: say what you are about to edit before you edit it. The server decides
 * every conflict (lease-held names the holder); the team's hooks deny an edit under another
 * member's exclusive lease (docs/agents.md).
 */
export function registerLeaseTools(
  server: ToolRegistry,
  ctx: { client: TeamClient; me: Identity },
): void {
  const { client, me } = ctx;
  const writes = me.role !== "observer";
  const leaseIdInput = z.string().min(1).describe("The lease's id, as acquire_lease returned it.");
  const ttlInput = z
    .number()
    .int()
    .min(0)
    .optional()
    .describe("How long it lasts, in seconds (unset: the server's default, 10 minutes).");

  server.registerTool(
    "acquire_lease",
    {
      listed: writes,
      description:
        "Takes a lease on what you are about to edit, before you edit it: a path glob relative " +
        "to the repository (`src/parser/**`, `README.md`, `docs/`) or a named resource " +
        "(`db:migrations`, `task:parser`). `exclusive` (the default) for editing: nobody else " +
        "may hold an overlapping lease, and the team's hooks deny their edits of it; `shared` " +
        "for reading. Refused lease-held when another member's lease overlaps (the refusal " +
        "names the holder and when it expires: ask it with send_message, or wait). Renew it " +
        "(renew_lease) before it expires; release it (release_lease) when done.",
      inputSchema: {
        resource: z.string().min(1).describe("A path glob or kind:name."),
        mode: z.enum(leaseModeNames).optional().describe("exclusive (default) or shared."),
        ttl_seconds: ttlInput,
        reason: z.string().optional().describe("What for: shown to whoever is refused by it."),
      },
    },
    (a) =>
      guarded(async () => {
        const lease = await client.acquireLease(a.resource, {
          ...(a.mode ? { mode: a.mode } : {}),
          ...(a.ttl_seconds !== undefined ? { ttlSeconds: a.ttl_seconds } : {}),
          ...(a.reason !== undefined ? { reason: a.reason } : {}),
        });
        return ok(
          `Leased ${JSON.stringify(lease.resource)} (${leaseModeName(lease.mode)}) until ${instant(lease.expiresAt)}: ${lease.leaseId}. Renew it (renew_lease) before then; release it (release_lease) when done.`,
          { lease: leaseJson(lease) },
        );
      }),
  );

  server.registerTool(
    "renew_lease",
    {
      listed: writes,
      description:
        "Extends your lease to now + ttl_seconds. Only its holder renews it; an expired or " +
        "released lease is gone (acquire it again).",
      inputSchema: { lease_id: leaseIdInput, ttl_seconds: ttlInput },
    },
    (a) =>
      guarded(async () => {
        const lease = await client.renewLease(a.lease_id, a.ttl_seconds ?? 0);
        return ok(
          `Renewed ${lease.leaseId} on ${JSON.stringify(lease.resource)}: held until ${instant(lease.expiresAt)}.`,
          { lease: leaseJson(lease) },
        );
      }),
  );

  server.registerTool(
    "release_lease",
    {
      listed: writes,
      description:
        "Gives your lease back when you are done, so others may take it. The lead may break " +
        "another member's lease with a `reason`, which the holder is told (and the journal keeps).",
      inputSchema: {
        lease_id: leaseIdInput,
        reason: z.string().optional().describe("Why (required when the lead breaks a lease)."),
      },
    },
    (a) =>
      guarded(async () => {
        const lease = await client.releaseLease(a.lease_id, a.reason ?? "");
        const whose = lease.holder === me.name ? "" : ` (${lease.holder}'s, who is told)`;
        return ok(`Released ${lease.leaseId} on ${JSON.stringify(lease.resource)}${whose}.`, {
          lease: leaseJson(lease),
        });
      }),
  );

  server.registerTool(
    "list_leases",
    {
      description:
        "The team's live leases, oldest first: who holds what, how, and until when. `holder`: " +
        "only that member's; `resource`: only leases overlapping it (a path, a glob or " +
        "kind:name), e.g. the file you are about to edit. Any member.",
      inputSchema: {
        holder: z.string().optional().describe("Only this member's leases."),
        resource: z.string().optional().describe("Only leases overlapping this resource."),
      },
    },
    (a) =>
      guarded(async () => {
        const leases = await client.listLeases({
          ...(a.holder ? { holder: a.holder } : {}),
          ...(a.resource ? { resource: a.resource } : {}),
        });
        return ok(leases.map(leaseLine).join("\n") || "No leases.", {
          leases: leases.map(leaseJson),
        });
      }),
  );
}

/** "lease_… alice exclusive "src/parser/**" until 2026-…Z: rewriting the lexer". */
export function leaseLine(l: Lease): string {
  return `${l.leaseId} ${l.holder} ${leaseModeName(l.mode)} ${JSON.stringify(l.resource)} until ${instant(l.expiresAt)}${l.reason ? `: ${l.reason}` : ""}`;
}

/** A lease for programs: snake_case keys, enum words (plain.ts). */
const leaseJson = (l: Lease) => plain(LeaseSchema, l);
