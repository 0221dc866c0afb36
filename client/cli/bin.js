#!/usr/bin/env node
// The `team` CLI. It is TypeScript run through tsx's loader, so `npx team` needs no build.
import { register } from "tsx/esm/api";

register();
const { runCli } = await import("./main.ts");
// An exit code, not process.exit(): `team serve` keeps running after runCli returns.
process.exitCode = await runCli(process.argv.slice(2));
