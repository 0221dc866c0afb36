import { create } from "@bufbuild/protobuf";
import { instant } from "@team-protocols/client/describe.js";
import { type LeaseModeName, leaseModeName, leaseModeNames } from "@team-protocols/client/names.js";
import { type Lease, LeaseSchema } from "@team-protocols/contract/team/v1/records_pb.js";
import { ListLeasesResponseSchema } from "@team-protocols/contract/team/v1/team_service_pb.js";
import { type Command, Option } from "commander";
import {
  asJson,
  type ConnectionOptions,
  clientFor,
  connectionOptions,
  duration,
  print,
  table,
} from "../context.js";

interface AcquireFlags extends ConnectionOptions {
  mode?: LeaseModeName;
  ttl?: number;
  reason?: string;
}

const ttlOption = () =>
  new Option(
    "--ttl <duration>",
    "how long it lasts, e.g. 90s or 30m (default: the server's, 10 minutes)",
  ).argParser(duration);

/** Whole seconds for the RPC (at least 1: 0 would mean the server's default). */
const ttlSeconds = (o: { ttl?: number }) =>
  o.ttl !== undefined ? { ttlSeconds: Math.max(1, Math.ceil(o.ttl / 1000)) } : {};

const printLease = (o: ConnectionOptions, what: string, lease: Lease) =>
  print(
    o,
    () =>
      `${what} ${lease.leaseId}: ${leaseModeName(lease.mode)} ${JSON.stringify(lease.resource)} held by ${lease.holder} until ${instant(lease.expiresAt)}`,
    () => asJson(LeaseSchema, lease),
  );

/** `team lease acquire|renew|release|list`: leases on paths and named resources. */
export function leaseCommands(program: Command): void {
  const lease = program
    .command("lease")
    .description(
      "leases: say what you are about to edit (a path glob or kind:name) before you edit it",
    );

  connectionOptions(
    lease
      .command("acquire")
      .description(
        "take a lease; refused (lease-held) when another member's overlaps, naming the holder; prints the lease id",
      )
      .argument(
        "<resource>",
        'a path glob relative to the repository ("src/parser/**") or kind:name',
      )
      .addOption(
        new Option("--mode <mode>", "exclusive (for editing) or shared (for reading)")
          .choices(leaseModeNames)
          .default("exclusive"),
      )
      .addOption(ttlOption())
      .option("--reason <text>", "what for: shown to whoever is refused by it"),
  ).action(async (resource: string, o: AcquireFlags) => {
    const got = await clientFor(o).acquireLease(resource, {
      ...(o.mode ? { mode: o.mode } : {}),
      ...ttlSeconds(o),
      ...(o.reason ? { reason: o.reason } : {}),
    });
    printLease(o, "leased", got);
  });

  connectionOptions(
    lease
      .command("renew")
      .description("the holder: extend the lease to now + --ttl")
      .argument("<lease-id>", "the lease, as acquire printed it")
      .addOption(ttlOption()),
  ).action(async (leaseId: string, o: ConnectionOptions & { ttl?: number }) => {
    const renewed = await clientFor(o).renewLease(leaseId, ttlSeconds(o).ttlSeconds ?? 0);
    printLease(o, "renewed", renewed);
  });

  connectionOptions(
    lease
      .command("release")
      .description("the holder: give the lease back; the lead: break another member's (--reason)")
      .argument("<lease-id>", "the lease")
      .option("--reason <text>", "why (the lead breaking a lease must say; the holder is told)"),
  ).action(async (leaseId: string, o: ConnectionOptions & { reason?: string }) => {
    const released = await clientFor(o).releaseLease(leaseId, o.reason ?? "");
    printLease(o, "released", released);
  });

  connectionOptions(
    lease
      .command("list")
      .description("the team's live leases, oldest first")
      .option("--holder <name>", "only this member's")
      .option("--resource <resource>", "only leases overlapping this path, glob or kind:name"),
  ).action(async (o: ConnectionOptions & { holder?: string; resource?: string }) => {
    const leases = await clientFor(o).listLeases({
      ...(o.holder ? { holder: o.holder } : {}),
      ...(o.resource ? { resource: o.resource } : {}),
    });
    print(
      o,
      () =>
        leases.length === 0
          ? "no leases"
          : table(
              ["LEASE", "HOLDER", "MODE", "RESOURCE", "EXPIRES", "REASON"],
              leases.map((l) => [
                l.leaseId,
                l.holder,
                leaseModeName(l.mode),
                l.resource,
                instant(l.expiresAt),
                l.reason || "-",
              ]),
            ),
      () => asJson(ListLeasesResponseSchema, create(ListLeasesResponseSchema, { leases })),
    );
  });
}
