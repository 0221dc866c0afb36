import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";

/**
 * What the Python agent tests need from Debian: grpcio and protobuf for /usr/bin/python3 (not
 * whichever python3 comes first on PATH), protoc with the gRPC Python plugin, and protoc's
 * well-known .proto files. .ci/run installs them.
 */
export const PYTHON = "/usr/bin/python3";
export const PROTOC = "/usr/bin/protoc";
export const GRPC_PLUGIN = "/usr/bin/grpc_python_plugin";
export const WELL_KNOWN_PROTOS = "/usr/include";
const APT_PACKAGES =
  "python3-grpcio python3-protobuf protobuf-compiler protobuf-compiler-grpc libprotobuf-dev";

const run = promisify(execFile);

/** What is missing, each with the package that provides it; empty when all is there. */
export async function missingPythonPrerequisites(): Promise<string[]> {
  const missing: string[] = [];
  const imports = await run(PYTHON, ["-c", "import grpc, google.protobuf"]).then(
    () => true,
    () => false,
  );
  if (!imports)
    missing.push(`grpcio and protobuf for ${PYTHON} (python3-grpcio, python3-protobuf)`);
  if (!existsSync(PROTOC)) missing.push(`${PROTOC} (protobuf-compiler)`);
  if (!existsSync(GRPC_PLUGIN)) missing.push(`${GRPC_PLUGIN} (protobuf-compiler-grpc)`);
  // protoc's own copies of google/protobuf/*.proto, which our files import.
  if (!existsSync(join(WELL_KNOWN_PROTOS, "google/protobuf/timestamp.proto"))) {
    missing.push(`the well-known .proto files in ${WELL_KNOWN_PROTOS} (libprotobuf-dev)`);
  }
  return missing;
}

/**
 * Checks the prerequisites for the tests of `what`, in the calling test file. Missing ones
 * fail the run under CI=true (a CI machine without them is broken, not excused) and are
 * skipped otherwise, saying so plainly. Returns true when the tests can run.
 */
export async function pythonPrerequisitesFor(what: string): Promise<boolean> {
  const missing = await missingPythonPrerequisites();
  if (missing.length === 0) return true;
  if (process.env.CI === "true") {
    it(`has the prerequisites of ${what} (mandatory under CI=true)`, () => {
      expect.fail(`missing ${missing.join("; ")}; install: apt-get install ${APT_PACKAGES}`);
    });
  } else {
    process.stdout.write(
      `\n*** SKIPPING ${what}: missing ${missing.join("; ")}.\n` +
        `*** Install them with: apt-get install -y --no-install-recommends ${APT_PACKAGES}\n\n`,
    );
  }
  return false;
}
