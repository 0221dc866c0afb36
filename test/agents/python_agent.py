"""A teammate agent in Python on grpcio, with stubs that protoc generated from proto/.

    PYTHONPATH=<stubs> TEAM_TOKEN=tp_... /usr/bin/python3 test/agents/python_agent.py 127.0.0.1:8080

It joins its team with the token it was given, streams its inbox, submits a plan to the
lead and waits for the verdict, acking what it handled, then approves the lead's shutdown request; the server then
ends its stream and it exits 0. One JSON line per event on stdout. test/interop/python.test.ts runs
it; the README shows it.
"""
import json
import os
import sys

import grpc
from team.v1 import enums_pb2, team_service_pb2 as api, team_service_pb2_grpc


def say(event, **fields):
    print(json.dumps({"event": event, **fields}), flush=True)


def main(target, token):
    auth = [("authorization", f"Bearer {token}")]
    # A local server: talk to it directly even when the environment names an HTTP proxy.
    with grpc.insecure_channel(target, options=[("grpc.enable_http_proxy", 0)]) as channel:
        team = team_service_pb2_grpc.TeamServiceStub(channel)
        members = team.ListMembers(api.ListMembersRequest(), metadata=auth).members
        say("joined", members=[m.name for m in members])

        # after_seq unset: resume after the ack cursor, so a restarted agent does not handle
        # again what it acked before (after_seq=0 would replay the whole inbox).
        inbox = team.Subscribe(api.SubscribeRequest(), metadata=auth)
        plan = team.Send(
            api.SendRequest(to="team-lead", message={"plan_approval_request": {"plan": "1. read 2. fix"}}),
            metadata=auth,
        )
        say("plan_submitted", request_id=plan.request_id)

        for event in inbox:  # backlog, then live; ends when the server ends the stream
            if not event.HasField("envelope"):
                continue  # a heartbeat
            envelope, kind = event.envelope, event.envelope.message.WhichOneof("kind")
            say("envelope", seq=envelope.seq, kind=kind)
            if kind == "plan_approval_response":
                verdict = envelope.message.plan_approval_response
                mode = enums_pb2.PermissionMode.Name(verdict.permission_mode)
                say("plan_answered", approve=verdict.approve, permission_mode=mode)
                if not verdict.approve:
                    return 1
            elif kind == "shutdown_request":
                answer = {"shutdown_response": {"request_id": envelope.request_id, "approve": True}}
                team.Send(api.SendRequest(to=getattr(envelope, "from"), message=answer), metadata=auth)
                say("shutdown_approved", request_id=envelope.request_id)
                continue  # our token is revoked now: nothing to ack with
            team.Ack(api.AckRequest(seq=envelope.seq), metadata=auth)  # handled
        say("stream_ended")
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], os.environ["TEAM_TOKEN"]))
