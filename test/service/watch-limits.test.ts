import { Code, ConnectError } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { MemberRole } from "../../gen/team/v1/enums_pb.js";
import { RuleViolationSchema } from "../../gen/team/v1/rule_violation_pb.js";
import { describeEachDatabase } from "../support/harness.js";
import { watch } from "../support/team-watch.js";

const ruleOf = (err: ConnectError | undefined) => err?.findDetails(RuleViolationSchema)[0]?.rule;

/**
 * What a lead can make the server hold through WatchTeam: observers it adds (each may watch)
 * and the streams of its team, capped per team (MAX_OBSERVERS_PER_TEAM 2 and
 * MAX_WATCHES_PER_TEAM 4 here; the per-member cap, 16, is not what stops them).
 */
describeEachDatabase(
  "WatchTeam: observers and open feeds per team are capped",
  (env) => {
    it("a third observer is refused with observers-per-team; removing one makes room", async () => {
      const t = await env().team();
      await t.lead.addMember({ name: "eye1", role: MemberRole.OBSERVER });
      await t.lead.addMember({ name: "eye2", role: MemberRole.OBSERVER });
      const err = await t.lead
        .addMember({ name: "eye3", role: MemberRole.OBSERVER })
        .catch(ConnectError.from);
      expect(err).toBeInstanceOf(ConnectError);
      const refused = err as ConnectError;
      expect(refused.code).toBe(Code.ResourceExhausted);
      expect(ruleOf(refused)).toBe("observers-per-team");
      expect(refused.rawMessage).toMatch(/MAX_OBSERVERS_PER_TEAM/);
      // Teammates are not observers: not counted.
      await t.lead.addMember({ name: "worker" });
      await t.lead.removeMember({ name: "eye1" });
      await t.lead.addMember({ name: "eye3", role: MemberRole.OBSERVER });
    });

    it("10 observers added at once under a cap of 2: exactly two are active, the rest refused with observers-per-team", async () => {
      const t = await env().team();
      const outcomes = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          t.lead
            .addMember({ name: `eye${i}`, role: MemberRole.OBSERVER })
            .then(() => "added")
            .catch((err) => ruleOf(ConnectError.from(err))),
        ),
      );
      expect(outcomes.filter((o) => o === "added")).toHaveLength(2);
      expect(outcomes.filter((o) => o === "observers-per-team")).toHaveLength(8);
      const { members } = await t.lead.listMembers({});
      expect(members.filter((m) => m.role === MemberRole.OBSERVER)).toHaveLength(2);
    });

    it("a fifth open feed of one team is refused with watches-per-team, whoever opens it; another team is not held; a closed feed makes room", async () => {
      const t = await env().team();
      const eye = await t.lead.addMember({ name: "eye", role: MemberRole.OBSERVER });
      const observer = env().client(eye.token);
      const open = [watch(t.lead), watch(t.lead), watch(observer), watch(observer)];
      for (const w of open) await w.until("the first response", (x) => x.responses.length > 0);
      const fifth = watch(observer);
      const err = await fifth.ended;
      expect(err?.code).toBe(Code.ResourceExhausted);
      expect(ruleOf(err)).toBe("watches-per-team");
      expect(err?.rawMessage).toMatch(/MAX_WATCHES_PER_TEAM/);

      const other = await env().team();
      const elsewhere = watch(other.lead);
      await elsewhere.until("the first response", (x) => x.responses.length > 0);
      elsewhere.stop();

      open[0]?.stop();
      await open[0]?.ended;
      // The server forgets the stream once its call ends: retried until it has.
      const deadline = Date.now() + 10_000;
      let again = watch(t.lead);
      for (;;) {
        const first = await Promise.race([
          again.until("the first response", (x) => x.responses.length > 0).then(() => "open"),
          again.ended.then(() => "refused"),
        ]);
        if (first === "open" || Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 50));
        again = watch(t.lead);
      }
      expect(again.responses.length).toBeGreaterThan(0);
      for (const w of [...open, again]) w.stop();
    });
  },
  { maxObserversPerTeam: 2, maxWatchesPerTeam: 4, heartbeatIntervalMs: 200 },
);
