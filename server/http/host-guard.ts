import { isIP } from "node:net";
import { refuseBrowser, requestAuthority } from "./browser-refusal.js";
import type { NodeRequest, NodeResponse } from "./connect-adapter.js";

/** The variable (and flag) that names more hosts; the refusal tells the operator about it. */
export const ALLOWED_HOSTS_ENV = "ALLOWED_HOSTS";

export interface HostGuard {
  /** Answers (403, returns true) a browser's request sent to a name we are not known by. */
  answer(req: NodeRequest, res: NodeResponse): boolean;
}

/**
 * DNS rebinding: a page of attacker.example, whose name the attacker then points at
 * 127.0.0.1, is "same origin" with this server (its Origin and the Host both say
 * attacker.example), so the origin guard lets it call, and read the answers of, a server
 * without TEAM_ADMIN_TOKEN. The one thing such a page cannot choose is the name it reaches
 * us by: that name is in the Host header. So a browser's request whose Host is not a name
 * we are known by is refused, before the console's files and any handler.
 *
 * Known names: localhost and *.localhost (browsers resolve them to loopback themselves),
 * any IP address (a page loaded from an address has nothing to rebind), and the names the
 * operator lists (ALLOWED_HOSTS, the bound address, the hosts of CONSOLE_ALLOWED_ORIGINS).
 * The port is not compared: rebinding changes what a name points at, not the port.
 *
 * Only browsers are held to this: a request with an Origin (browsers send it with every
 * POST and every cross-origin call) or a Sec-Fetch-* header (with every request to https
 * and to localhost). Agents, the CLI and grpc send neither and may reach us by any name (a
 * proxy, a service name, /etc/hosts). A rebound page's GET over plain http carries neither
 * and is served; that reaches only the console's files and /metrics (counts without names;
 * METRICS_TOKEN closes it). Everything that reads or changes a team needs a token the page
 * does not have, except CreateTeam, a POST.
 */
export function createHostGuard(allowedNames: readonly string[]): HostGuard {
  const allowed = new Set(allowedNames.map((n) => n.toLowerCase()));
  return {
    answer(req, res) {
      if (!fromBrowser(req)) return false;
      const authority = requestAuthority(req);
      const name = authority === undefined ? undefined : hostnameOf(authority);
      if (name !== undefined && isKnown(name, allowed)) return false;
      refuse(res, authority ?? "");
      return true;
    },
  };
}

function fromBrowser(req: NodeRequest): boolean {
  if (req.headers.origin !== undefined) return true;
  return Object.keys(req.headers).some((h) => h.startsWith("sec-fetch-"));
}

/** The name part of a Host header (lowercase, IPv6 without brackets); undefined: not a host. */
function hostnameOf(authority: string): string | undefined {
  try {
    const url = new URL(`http://${authority}`);
    // A Host is host[:port] only: anything URL would read as a path or user is not one.
    if (url.host !== authority.toLowerCase()) return undefined;
    return url.hostname.replace(/^\[(.*)\]$/, "$1");
  } catch {
    return undefined;
  }
}

function isKnown(name: string, allowed: ReadonlySet<string>): boolean {
  return (
    name === "localhost" || name.endsWith(".localhost") || isIP(name) !== 0 || allowed.has(name)
  );
}

function refuse(res: NodeResponse, authority: string): void {
  refuseBrowser(
    res,
    `host: this server is not known to browsers by the name ${JSON.stringify(authority.slice(0, 200))} ` +
      `(a defence against DNS rebinding); the server's operator may allow the name with ${ALLOWED_HOSTS_ENV}`,
  );
}
