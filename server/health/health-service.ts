import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { Health, HealthCheckResponseSchema } from "@team-protocols/contract/health/v1/health_pb.js";
import { type HealthMonitor, ServingStatus } from "./health-monitor.js";

/**
 * The standard grpc.health.v1.Health service, as Kubernetes gRPC probes, grpc-health-probe
 * and load balancers call it. Needs no token: it tells nothing about any team.
 */
export function serveHealth(router: ConnectRouter, monitor: HealthMonitor): void {
  const response = (status: ServingStatus) => create(HealthCheckResponseSchema, { status });

  router.service(Health, {
    async check(req) {
      await monitor.refresh();
      const status = monitor.status(req.service);
      if (status === undefined) {
        throw new ConnectError(
          `health is not reported for service "${req.service}"`,
          Code.NotFound,
        );
      }
      return response(status);
    },

    // The status now, then every change, until the client leaves or the server stops. An
    // unknown service is SERVICE_UNKNOWN and the stream stays open, as the protocol says.
    async *watch(req, ctx) {
      let sent: ServingStatus | undefined;
      for (;;) {
        const version = monitor.version;
        const status = monitor.status(req.service) ?? ServingStatus.SERVICE_UNKNOWN;
        if (status !== sent) {
          yield response(status);
          sent = status;
        }
        if (monitor.stopping || ctx.signal.aborted) return;
        await monitor.changed(version, ctx.signal);
      }
    },

    async list() {
      await monitor.refresh();
      const statuses: Record<string, ReturnType<typeof response>> = {};
      for (const [service, status] of monitor.statuses()) statuses[service] = response(status);
      return { statuses };
    },
  });
}
