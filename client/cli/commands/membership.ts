import { createInterface } from "node:readline/promises";
import { instant } from "@team-protocols/client/describe.js";
import {
  memberRoleName,
  memberStatusName,
  type PermissionModeName,
  permissionModeName,
  permissionModeNames,
  presenceName,
  seenViaName,
} from "@team-protocols/client/names.js";
import { MemberSchema } from "@team-protocols/contract/team/v1/records_pb.js";
import { type Command, Option } from "commander";
import {
  asJson,
  type ConnectionOptions,
  clientFor,
  connectionOptions,
  print,
  table,
  UsageError,
} from "../context.js";

/** create-team, add-member, remove-member, members. */
export function membershipCommands(program: Command): void {
  connectionOptions(
    program
      .command("create-team")
      .description("create a team and its lead; prints the lead's token (shown only once)")
      .argument("<team>", "the team's name, unique on the server")
      .option("--lead-name <name>", "the lead's member name", "team-lead")
      .addOption(
        new Option("--lead-mode <mode>", "the lead's permission mode (a teammate inherits it)")
          .choices(permissionModeNames)
          .default("default"),
      ),
    "admin",
  ).action(
    async (
      team: string,
      o: ConnectionOptions & { leadName: string; leadMode: PermissionModeName },
    ) => {
      const created = await clientFor(o, "admin").createTeam(team, {
        leadName: o.leadName,
        leadPermissionMode: o.leadMode,
      });
      print(
        o,
        () =>
          `created team "${team}" with lead "${created.lead?.name}" (permission mode ${o.leadMode})\n` +
          `lead token (shown only once): ${created.token}\n` +
          `  export TEAM_URL=${o.url} TEAM_TOKEN=${created.token}`,
        () => ({
          team,
          token: created.token,
          lead: created.lead && asJson(MemberSchema, created.lead),
        }),
      );
    },
  );

  connectionOptions(
    program
      .command("add-member")
      .description(
        "lead: add a teammate (or --observer, --approver); prints its token (shown only once)",
      )
      .argument("<name>", "the teammate's name")
      .option("--observer", "a read-only member: it lists and watches the team (team watch)", false)
      .option(
        "--approver",
        "a member (a person) who answers your approvals for you: plans, permissions, task claims, sign-offs",
        false,
      )
      .addOption(
        new Option(
          "--mode <mode>",
          "the permission mode it starts in (plan: it plans and asks before acting; default: yours)",
        ).choices(permissionModeNames),
      ),
  ).action(
    async (
      name: string,
      o: ConnectionOptions & { mode?: PermissionModeName; observer: boolean; approver: boolean },
    ) => {
      if (o.observer && o.approver) throw new UsageError("give --observer or --approver, not both");
      const added = await clientFor(o).addMember(name, {
        ...(o.mode ? { permissionMode: o.mode } : {}),
        observer: o.observer,
        approver: o.approver,
      });
      print(
        o,
        () =>
          `added "${name}"\ntoken (shown only once): ${added.token}\n` +
          `  export TEAM_URL=${o.url} TEAM_TOKEN=${added.token}`,
        () => ({ token: added.token, member: added.member && asJson(MemberSchema, added.member) }),
      );
    },
  );

  connectionOptions(
    program
      .command("remove-member")
      .description("lead: force-stop a teammate (token revoked, streams ended)")
      .argument("<name>", "the teammate to stop"),
  ).action(async (name: string, o: ConnectionOptions) => {
    const member = await clientFor(o).removeMember(name);
    print(
      o,
      () => `removed "${member.name}" (now ${memberStatusName(member.status)})`,
      () => ({ member: asJson(MemberSchema, member) }),
    );
  });

  connectionOptions(
    program.command("members").description('list the team\'s members (yours is marked "(you)")'),
  ).action(async (o: ConnectionOptions) => {
    const { members, you } = await clientFor(o).rpc.listMembers({});
    print(
      o,
      () =>
        table(
          ["NAME", "ROLE", "STATUS", "MODE", "PRESENCE", "LAST SEEN", "VIA"],
          members.map((m) => [
            m.name === you ? `${m.name} (you)` : m.name,
            memberRoleName(m.role),
            memberStatusName(m.status),
            permissionModeName(m.permissionMode),
            presenceName(m.presence),
            instant(m.lastSeenAt),
            m.lastSeenVia ? seenViaName(m.lastSeenVia) : "-",
          ]),
        ),
      () => ({ you, members: members.map((m) => asJson(MemberSchema, m)) }),
    );
  });

  connectionOptions(
    program
      .command("whoami")
      .description("who your token is: team, name, role, permission mode, and the lead"),
  ).action(async (o: ConnectionOptions) => {
    const { members, you, team } = await clientFor(o).rpc.listMembers({});
    const me = members.find((m) => m.name === you);
    const lead = members.find((m) => memberRoleName(m.role) === "lead");
    const who = {
      team,
      name: you,
      role: me ? memberRoleName(me.role) : "",
      permission_mode: me ? permissionModeName(me.permissionMode) : "",
      lead: lead?.name ?? "",
      url: o.url,
    };
    print(
      o,
      () =>
        `${who.name} in team "${who.team}" (${who.role}, permission mode ${who.permission_mode}); ` +
        `the lead is ${who.lead === who.name ? "you" : who.lead}; server ${who.url}`,
      () => who,
    );
  });

  connectionOptions(
    program
      .command("delete-team")
      .description(
        "lead: delete your team and everything it stored; every token stops working (asks to confirm)",
      )
      .argument("<team>", "your team's name, repeated as the confirmation")
      .option("--yes", "do not ask (scripts)", false),
  ).action(async (team: string, o: ConnectionOptions & { yes: boolean }) => {
    if (!o.yes) {
      if (!process.stdin.isTTY)
        throw new UsageError(`delete-team asks to confirm: add --yes to delete "${team}"`);
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      const answer = await rl.question(
        `delete team "${team}", its members, messages, requests and tasks? type its name: `,
      );
      rl.close();
      if (answer.trim() !== team) throw new UsageError("not confirmed: nothing was deleted");
    }
    const res = await clientFor(o).rpc.deleteTeam({ team });
    print(
      o,
      () => `deleted team "${team}": ${res.membersRemoved} member token(s) no longer work`,
      () => ({ team, members_removed: res.membersRemoved }),
    );
  });

  connectionOptions(
    program
      .command("rotate-token")
      .description(
        "replace your token (or, lead: a member's); the old one is refused at once and its streams end",
      )
      .argument("[member]", "lead only: whose token (default: yours)"),
  ).action(async (member: string | undefined, o: ConnectionOptions) => {
    const res = await clientFor(o).rpc.rotateToken({ member: member ?? "" });
    const name = res.member?.name ?? member ?? "";
    print(
      o,
      () =>
        `new token for "${name}" (shown only once; the old one no longer works): ${res.token}\n` +
        `  export TEAM_URL=${o.url} TEAM_TOKEN=${res.token}`,
      () => ({ token: res.token, member: res.member && asJson(MemberSchema, res.member) }),
    );
  });
}
