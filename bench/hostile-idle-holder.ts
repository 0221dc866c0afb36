/**
 * A child process of the idle-connections scenario (bench/hostile-idle-connections.ts):
 * opens `count` connections of one kind to `url` and holds them, saying nothing:
 *   h2    HTTP/2 (prior knowledge): SETTINGS, then only PING answers
 *   tcp   TCP connections that never send a byte
 *   h1    HTTP/1.1: one keep-alive request answered, then silent
 * It prints one JSON line a second: {"opened", "closed", "failed"}. A process of its own for
 * its file descriptors (20,000 connections are more than one process may hold here).
 *
 *   node --import tsx bench/hostile-idle-holder.ts KIND COUNT URL
 */
import http2 from "node:http2";
import net from "node:net";

const [kind, countText, url] = process.argv.slice(2);
const count = Number(countText);
const { hostname, port } = new URL(url as string);
const held: { destroy(): void }[] = [];
let opened = 0;
let closed = 0;
let failed = 0;

function openOne(): Promise<void> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (ok: boolean) => {
      if (settled) return;
      settled = true;
      if (ok) opened++;
      else failed++;
      resolve();
    };
    const onClose = () => {
      if (settled) closed++;
      else done(false);
    };
    if (kind === "h2") {
      const session = http2.connect(url as string);
      session.on("error", () => {});
      session.once("close", onClose);
      session.once("connect", () => session.ping(() => done(true)));
      held.push(session);
    } else {
      const socket = net.connect(Number(port), hostname);
      socket.on("error", () => {});
      socket.once("close", onClose);
      held.push(socket);
      socket.once("connect", () => {
        if (kind === "tcp") return done(true);
        socket.write(
          `GET /healthz HTTP/1.1\r\nHost: ${hostname}\r\nConnection: keep-alive\r\n\r\n`,
        );
        socket.once("data", () => done(true));
      });
    }
    setTimeout(() => done(false), 10_000).unref();
  });
}

const report = setInterval(
  () => process.stdout.write(`${JSON.stringify({ opened, closed, failed })}\n`),
  1_000,
);
let next = 0;
await Promise.all(
  Array.from({ length: 100 }, async () => {
    while (next < count) {
      next++;
      await openOne();
    }
  }),
);
process.stdout.write(`${JSON.stringify({ opened, closed, failed, filled: true })}\n`);
process.once("SIGTERM", () => {
  clearInterval(report);
  for (const c of held) c.destroy();
  process.exit(0);
});
