// Creates an embedded PostgreSQL cluster in the folder named by argv[2], then exits.
// Run as a child process by embedded-database.ts: PGlite's initdb leaves about 500 MB of
// WebAssembly memory behind that the process never gives back (measured: a fresh folder
// idles at 852 MB RSS, the same folder reopened by a new process at 208 MB), so the
// cluster is made by a process that then ends. Plain JavaScript: it needs no loader.
import { PGlite } from "@electric-sql/pglite";

const dataDir = process.argv[2];
if (!dataDir) {
  process.stderr.write("usage: embedded-initdb.mjs <data folder>\n");
  process.exit(2);
}
const db = await PGlite.create({ dataDir });
await db.close();
