import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { RuleViolationSchema } from "../../gen/team/v1/rule_violation_pb.js";
import { TeamService } from "../../gen/team/v1/team_service_pb.js";
import {
  describeEachDatabase,
  type Protocol,
  transportFor,
  uniqueName,
} from "../support/harness.js";
import { subscribedBeyond } from "../support/subscribed.js";

const protocols: Protocol[] = ["grpc", "connect", "connect-h1", "grpc-web"];

describeEachDatabase("one port, every protocol", (env) => {
  for (const protocol of protocols) {
    it(`${protocol}: create a team, add a member, send, stream the inbox, see a refusal with its rule`, async () => {
      const url = env().server.url;
      const anon = createClient(TeamService, transportFor(url, protocol));
      const created = await anon.createTeam({ team: uniqueName(protocol) });
      const lead = createClient(TeamService, transportFor(url, protocol, created.token));
      const added = await lead.addMember({ name: "worker" });
      const worker = createClient(TeamService, transportFor(url, protocol, added.token));

      const abort = new AbortController();
      const before = env().app.hub.waiting;
      const received = (async () => {
        for await (const event of worker.subscribe({ afterSeq: 0n }, { signal: abort.signal })) {
          if (event.event.case === "envelope") return event.event.value;
        }
        return undefined;
      })();
      await subscribedBeyond(env().app, before); // so the message can only arrive live
      await lead.send({
        to: "worker",
        message: { kind: { case: "text", value: `via ${protocol}` } },
      });
      const envelope = await received;
      abort.abort();
      expect(envelope?.message?.kind).toEqual({ case: "text", value: `via ${protocol}` });
      expect(envelope?.from).toBe("team-lead");

      const err = await lead
        .send({ to: "Not A Name", message: { kind: { case: "text", value: "x" } } })
        .catch((e) => ConnectError.from(e));
      expect(err).toBeInstanceOf(ConnectError);
      const refusal = err as ConnectError;
      expect(refusal.code).toBe(Code.InvalidArgument);
      expect(refusal.rawMessage).toMatch(/^size-shape: /);
      const [detail] = refusal.findDetails(RuleViolationSchema);
      expect(detail).toMatchObject({ rule: "size-shape", field: "to" });
      expect(detail?.description).toMatch(/not a valid name/);
    });
  }
});
