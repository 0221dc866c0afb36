import type { ServiceImpl } from "@connectrpc/connect";
import type { TeamService } from "../../gen/team/v1/team_service_pb.js";
import { DomainError } from "../errors.js";

type RequestsImpl = Pick<
  ServiceImpl<typeof TeamService>,
  "getRequest" | "listRequests" | "awaitRequest" | "cancelRequest"
>;

const notYet = (): never => {
  throw new DomainError("unimplemented", "protocol requests are not supported by this server yet");
};

/** GetRequest, ListRequests, AwaitRequest, CancelRequest: the protocols issue builds them. */
export function requestHandlers(): RequestsImpl {
  return {
    getRequest: notYet,
    listRequests: notYet,
    awaitRequest: notYet,
    cancelRequest: notYet,
  };
}
