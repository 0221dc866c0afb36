import { readFile, writeFile } from "node:fs/promises";
import { createTeamClient } from "../../client/index.js";

/**
 * A stand-in agent runtime for `team up`'s command-template members: it takes its name, MCP
 * configuration file and prompt from the template's placeholders, reads its server and token
 * from that configuration (as an MCP client would), greets the lead with its prompt, and
 * approves a shutdown request, then exits 0. With CRASH_ONCE set to a file that does not
 * exist yet, it creates it and exits 1 first: a crash to restart.
 */
const [name, mcpConfig, prompt] = process.argv.slice(2);
const crashOnce = process.env.CRASH_ONCE;
if (crashOnce) {
  const first = await readFile(crashOnce).then(
    () => false,
    () => true,
  );
  if (first) {
    await writeFile(crashOnce, "crashed\n");
    console.log(`${name}: crashing on purpose`);
    process.exit(1);
  }
}
const config = JSON.parse(await readFile(mcpConfig as string, "utf8")) as {
  mcpServers: { team: { env: { TEAM_URL: string; TEAM_TOKEN: string } } };
};
const { TEAM_URL, TEAM_TOKEN } = config.mcpServers.team.env;
const client = createTeamClient({ baseUrl: TEAM_URL, token: TEAM_TOKEN });
await client.sendText(await client.leadName(), `${name} is up: ${prompt}`);
console.log(`${name}: greeted the lead`);
const inbox = client.inbox();
for await (const envelope of inbox) {
  const kind = envelope.message?.kind;
  inbox.ack(envelope);
  if (kind?.case === "shutdownRequest") {
    await inbox.flush();
    await client.approveShutdown(envelope.requestId);
    console.log(`${name}: approved the shutdown`);
    process.exit(0);
  }
}
